"""Reusable Streamlit widgets of the studio.

Every store read goes through :mod:`components.loaders`.
"""
