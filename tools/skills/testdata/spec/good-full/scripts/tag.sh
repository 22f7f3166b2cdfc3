#!/bin/sh
set -eu
echo "would tag $1"
