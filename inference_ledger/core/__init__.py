"""The expression core, the ground floor: dual evaluation (:mod:`.expr`), the ``@line`` decorator (:mod:`.line`), the
argument table with every input's meaning, unit and range (:mod:`.args`), named units and constants (:mod:`.units`)
and the one way files are read and written (:mod:`.files`).  Imports nothing else of the library."""
