"""The workbook: one module per sheet (openpyxl), the streaming sweep writer and the LibreOffice recalculation helper.

This folder is the design card's ``workbook/``; it is installed as ``inference_ledger.workbook`` (pyproject.toml's
``package-dir``), never as a top-level name of its own.  Sheet modules import each other relatively.
"""
