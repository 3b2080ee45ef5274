# The two commands of the README. Both set everything up first (tools/setup.sh is
# idempotent: a second run takes seconds).

.PHONY: run test setup bench clean

# The main job: the scenario library on the local backend, two runs at a time (each
# with its own ports and proxies), a verdict per scenario,
# and a suite report over all runs, in results/. The report is written whatever the
# verdicts (not after bad input, exit 2: nothing ran); then the recipe fails with
# hdfs-chaos run's exit code (1: a scenario failed).
run:
	@tools/setup.sh
	@status=0; .venv/bin/hdfs-chaos run scenarios/*.yaml --workers 2 --out results || status=$$?; \
	if [ $$status -le 1 ]; then .venv/bin/hdfs-chaos report results --out results || exit $$?; fi; \
	exit $$status

# All tests (tox): unit, integration, verifier, the scenario library on the local
# backend, and on the docker backend where a Docker engine answers (setup starts one
# when it can), and real Apache Hadoop daemons (tox -e hadoop; setup fetches the jars once);
# the reports are opened in headless Chromium (setup installs it from Debian's packages).
test:
	tools/setup.sh --docker --hadoop --browser
	.venv/bin/tox

setup:
	tools/setup.sh --docker

bench:
	tools/setup.sh
	.venv/bin/python benchmarks/bench_write.py
	.venv/bin/python benchmarks/bench_verifier.py --events 10000000
	.venv/bin/python benchmarks/bench_backends.py

clean:
	.venv/bin/hdfs-chaos cleanup || true
	rm -rf .tox .pytest_cache
