"""Job models: how fast a job runs where it is placed (pipeline jobs, A-SRPT eq. 4-7), and the model catalogue."""
