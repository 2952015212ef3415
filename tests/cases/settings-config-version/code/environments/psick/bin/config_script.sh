#!/bin/bash
echo "no git - environment ${1}"
exit 0
