"""Altair chart builders, `<name>_chart(df, tr) -> alt.Chart`. Imported by pages only, never by the CLI path."""
