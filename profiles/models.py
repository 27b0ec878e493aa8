"""Models arrive with the saved-queries and login-profiles issues."""
