#!/bin/sh
echo "version of $1"
exit ${2:-0}
