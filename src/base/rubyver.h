/* rubyver.h - which Ruby's words a message takes. Puppet 7.23 and Hiera 3.10 run on Debian 12's
 * Ruby 3.1 (json 2.6, ruby/openssl 3.0, Psych 4); Puppet 8.10 and Hiera 3.12 on Debian 13's Ruby
 * 3.3 (json 2.7, ruby/openssl 3.2, Psych 5), whose exceptions say some things otherwise. The
 * choice is the calling thread's, as the diagnostics sink is (diag.h): the library's entry points
 * set it for the context they serve, and code anywhere below words its messages by it. */
#ifndef HIERA_RUBYVER_H
#define HIERA_RUBYVER_H

#include "base/util.h"

typedef enum { RUBY_31 = 0, RUBY_33 = 1 } ruby_ver;

/* The calling thread's Ruby (RUBY_31 until set). */
ruby_ver rubyver(void);
/* Sets it, returning the one in effect before (for rubyver_leave). Calls nest. */
ruby_ver rubyver_enter(ruby_ver v);
void rubyver_leave(ruby_ver previous);

/* NoMethodError#message for a receiver, without error_highlight's lines: Ruby 3.1 "undefined
 * method `m' for <inspect>:<Class>" (inspect e.g. "nil", "42", "\"x\""), Ruby 3.3 "undefined
 * method `m' for nil" (true, false alike) or "... for an instance of <Class>". A new string. */
char *ruby_no_method(const char *method, const char *inspect, const char *class_name);

#endif
