"""Background work with one owner: ``background.BackgroundWork`` starts, drains and reports every job."""
