"""Results and files: CSVs written as rows are measured (outputs) and read back (results), damaged shipped files told
apart (files), and a spreadsheet-safe CSV download (spreadsheet).
"""
