"""Pure view logic the pages render (tables, charts, drafts, diffs); no Streamlit here."""
