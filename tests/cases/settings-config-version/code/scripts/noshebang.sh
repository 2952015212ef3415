echo "run by sh"
exit 6
