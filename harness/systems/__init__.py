"""Systems under test."""
