"""The render stage: replay recorded physics states under visual looks and write camera videos."""
