# Developer shortcuts (the README gives the two commands a newcomer needs).
.PHONY: check lint test snap-update bench serve nojit

check: lint test

lint:
	ruff format --check gpusched policies tests bench hatch_build.py
	ruff check gpusched policies tests bench hatch_build.py
	mypy gpusched/
	lint-imports --no-logo

test:
	python -m pytest

snap-update:
	python -m pytest tests/test_golden.py tests/test_tui.py --snapshot-update

bench:
	python -m pytest bench/ --benchmark-only

serve:
	textual run --dev -c gpusched replay --policy tiresias --tui

nojit:
	NUMBA_DISABLE_JIT=1 python -m pytest tests/test_engine.py tests/test_properties.py tests/test_kernel_vs_naive.py -k "not slot_length"
