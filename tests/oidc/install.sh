#!/usr/bin/env bash
# Installs the OpenID provider the SSO tests sign in against: the certified `oidc-provider`
# package from npm, run by node from provider.mjs (ours). Installed into the ignored
# node_modules/ here; idempotent and quick when in place. .ci/run calls it, tests may too.
set -euo pipefail
cd "$(dirname "$0")"

OIDC_PROVIDER_VERSION=9.13.3

stamp=".installed-$OIDC_PROVIDER_VERSION"
if [ -f "$stamp" ] && [ -d node_modules/oidc-provider ]; then
  exit 0
fi

npm install --silent --no-audit --no-fund --no-save --prefix . \
  "oidc-provider@$OIDC_PROVIDER_VERSION"

rm -f .installed-*
touch "$stamp"
echo "oidc-provider installed in tests/oidc"
