.PHONY: run test lint format migrate client wheels

run:           ## serve on the embedded defaults (SQLite in ./.airlock, 127.0.0.1:8080)
	scripts/run.sh

test:          ## install what is missing, start PostgreSQL, run ruff and every test
	scripts/test.sh

lint:
	.venv/bin/ruff check . && .venv/bin/ruff format --check .

format:
	.venv/bin/ruff check --fix . && .venv/bin/ruff format .

migrate:
	.venv/bin/airlock migrate

client:        ## regenerate clients/openapi.json and clients/python from the code
	scripts/gen-client.sh

wheels:        ## build the service's, the client's and airlock-agents' wheels into dist/
	scripts/build-wheels.sh
