"""Hadoop."""
