/* facts.h - a node's facts as `puppet lookup` finds them (facts.c): the public
 * hiera_node_facts_find (include/hiera_fleet.h) and what it is made of. */
#ifndef HIERA_FACTS_FACTS_H
#define HIERA_FACTS_FACTS_H

#include "hiera_fleet.h"

/* The versions of Puppet this project answers as (hiera_puppet_version); Puppet reports its own
 * version in the puppetversion and clientversion facts of the local machine. */
#define CLI_PUPPET_VERSION "7.23.0"
#define CLI_PUPPET8_VERSION "8.10.0"

#endif
