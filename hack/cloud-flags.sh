#!/usr/bin/env bash
# cloud-flags.sh CLOUD: the command-line flags that say where scaleproof runs on
# CLOUD (gke, eks or aks), one a line, from the environment the nightly and
# janitor workflows set from the repository's variables:
#   gke  --project $GKE_PROJECT --location $GKE_LOCATION
#   eks  --region $EKS_REGION
#   aks  --subscription $AZURE_SUBSCRIPTION_ID --resource-group $AKS_RESOURCE_GROUP --location $AKS_LOCATION
# A variable left empty is an error naming it (exit 2), so a half-configured
# repository fails before any cloud call. Used as (a process substitution,
# < <(...), would lose that exit status)
#   out=$(hack/cloud-flags.sh gke) && mapfile -t flags <<<"$out"
#   bin/scaleproof run --platform gke "${flags[@]}" --ttl 3h
set -euo pipefail

need() { # need FLAG VARIABLE: print FLAG and the variable's value, or fail naming it
	local v="${!2:-}"
	if [ -z "$v" ]; then
		echo "cloud-flags.sh: repository variable $2 is not set ($1 for $cloud); set it under Settings > Secrets and variables > Actions > Variables (docs/cloud.md)" >&2
		exit 2
	fi
	printf '%s\n%s\n' "$1" "$v"
}

cloud="${1:-}"
case "$cloud" in
gke)
	out=$(need --project GKE_PROJECT && need --location GKE_LOCATION)
	;;
eks)
	out=$(need --region EKS_REGION)
	;;
aks)
	out=$(need --subscription AZURE_SUBSCRIPTION_ID && need --resource-group AKS_RESOURCE_GROUP && need --location AKS_LOCATION)
	;;
*)
	echo "usage: cloud-flags.sh gke|eks|aks (got \"$cloud\")" >&2
	exit 2
	;;
esac
printf '%s\n' "$out"
