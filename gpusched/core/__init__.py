"""The simulation: state, kernels (compiled or interpreted), the engine and its mechanisms,
the policy API, the view a policy reads, job tables and job-model hooks, the resource ledger,
tasks on typed workers, and the event log."""
