"""What a run reports and how it is read back: job records and summaries (metrics),
statistics over seeds, explain, diff, Gantt charts, plots, and durations in words."""
