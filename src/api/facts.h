/* facts.h - a node's facts and $trusted as Puppet hands them to a compilation (facts.c). */
#ifndef HIERA_API_FACTS_H
#define HIERA_API_FACTS_H

#include "hiera.h"

#include "base/error.h"
#include "base/util.h"
#include "base/value.h"

/* Puppet::Node::Facts#sanitize: every fact value (not the top-level names) with what is not a
 * Hash, Array, Numeric, Boolean or String replaced by its to_s (nil -> "", a Symbol -> its name),
 * hash keys included. A new hash. Returns NULL with err when a top-level name is a Symbol (the
 * compiler's deep_freeze refuses it: "Unsupported data type: 'Symbol'"). */
hv *facts_sanitize(const hv *facts, herr *err);

/* $trusted for a node with these (sanitized) facts, as Puppet's Node#sanitize chooses it: the
 * given trusted hash (completed by trusted_complete) when there is one; else the `trusted` fact
 * when it is a Hash with the keys authenticated, certname and extensions (how PuppetDB hands a
 * node's trusted data back), as it is; else the local trusted information `puppet lookup` builds
 * from the clientcert fact. A new hash. */
hv *trusted_for(const hv *facts, const hv *given);

/* A trusted hash given by the caller, checked and completed: NULL with err when it is not a
 * Hash with authenticated ("remote", "local" or false), certname (a String, or undef) and
 * extensions (a Hash), or holds something that is not Puppet data; otherwise a new hash in
 * Puppet's key order (authenticated, certname, extensions, hostname, domain, external, then
 * any other keys given), hostname and domain split from certname at its first dot when not
 * given, as Puppet::Context::TrustedInformation does, and external {} when not given. */
hv *trusted_complete(const hv *given, herr *err);

#endif
