#!/bin/sh
# The arrows run one way (STYLE.md 6): tools -> kernel -> {executor, runner, diff, ledger} ->
# common. Checked here for what issue 10 moved: executor/ includes common/ and itself only,
# and LMDB is private to ledger/ (its public headers do not include it; ledger_impl.h is
# included from ledger/ alone). Run from the source root; prints each wrong-way include.
status=0
if grep -rnE '#include ["<](ledger|kernel|runner|diff|tools)/|#include ["<](common/lmdb\.h|lmdb\.h)' executor/; then
  echo "executor/ must depend on common/ only" >&2
  status=1
fi
if grep -nE '#include ["<](common/lmdb\.h|lmdb\.h)' ledger/*.h | grep -v '^ledger/ledger_impl\.h:'; then
  echo "ledger/'s public headers must not expose LMDB" >&2
  status=1
fi
if grep -rn --include='*.h' --include='*.cc' 'ledger/ledger_impl\.h' . | grep -vE '^\./(ledger/|build)'; then
  echo "ledger/ledger_impl.h is for ledger/ only" >&2
  status=1
fi
exit $status
