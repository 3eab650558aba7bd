"""What gpusched reads and writes as files: traces, cluster specs, tables (CSV and Parquet),
small user files, and where the bundled policies, clusters and traces live."""
