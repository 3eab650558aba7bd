"""Reusable algorithms that several policies call: Bayesian optimisation, Heavy-Edge, predictors."""
