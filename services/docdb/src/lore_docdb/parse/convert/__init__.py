"""Converters from one file format to Markdown-like text: headings as `#`, lists as `- `, tables as
`| a | b |` rows (one row per line, so a row's cells stay together), and for PDFs a form feed between
pages so each page's text can be found again. They run inside the extraction child (`parse/sandbox.py`);
any exception they raise becomes the file's skip reason."""
