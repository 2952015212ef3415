"""Where ../shared/tools/puppet-bulk-lookup is: the first folder above the checkout that holds
shared/tools/puppet-bulk-lookup (the comparison tools' default for --bulk)."""
import os


def default_bulk(here):
    d = os.path.dirname(os.path.dirname(here))
    while d != "/" and not os.path.exists(os.path.join(d, "shared", "tools", "puppet-bulk-lookup")):
        d = os.path.dirname(d)
    return os.path.join(d, "shared", "tools", "puppet-bulk-lookup")
