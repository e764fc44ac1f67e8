#!/bin/sh
# Example hook script: written executable into the workspace.
set -eu
echo "$LB_NAME"
