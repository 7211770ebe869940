"""Public wire models (pydantic v2, unknown fields rejected). Imports nothing else of ours."""
