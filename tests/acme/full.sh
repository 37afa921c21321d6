#!/usr/bin/env bash
# The ACME suites' full mode (#33): 1 000 crashes at the checkpoints of
# issuance and renewal, and 100 trials of two processes on one storage,
# beside the quick mode's 30 and 20 that ./test.sh runs. Needs what
# ./test.sh installs.
set -euo pipefail
cd "$(dirname "$0")/../.."
NIKAIA_ACME_FULL=1 cargo test -p nikaia_cli --locked --test acme_mock -- --nocapture \
    sigkill_at_every_point two_processes_on_one_storage
