"""File and mail I/O beyond the catalogs: benchmark outputs and engine logs read (:mod:`.benchfiles`), the plan as text
tables (:mod:`.report`), the plan workbook by email (:mod:`.mail`)."""
