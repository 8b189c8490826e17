# The metadata log (issue 2): tests of the log, format and dump-log, and the
# append+flush benchmark (never part of `make test`).

.PHONY: test-log bench-log

# test-rust already runs these; `make test-log` runs just them.

test-log: ## log, format and dump-log tests (controller crate)
	$(CARGO) test -p kraft-controller --lib --test 'log_*' --test 'format_*'

bench-log: ## append+flush throughput of the on-disk log (records/s, MB/s)
	$(CARGO) bench -p kraft-controller --bench log_append
