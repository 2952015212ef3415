/* rubyver.c - the calling thread's Ruby, and the messages that differ between Ruby 3.1 and 3.3
 * (rubyver.h). */
#include "base/rubyver.h"

#include <string.h>

static _Thread_local ruby_ver current;

ruby_ver rubyver(void) { return current; }

ruby_ver rubyver_enter(ruby_ver v)
{
    ruby_ver was = current;
    current = v;
    return was;
}

void rubyver_leave(ruby_ver previous) { current = previous; }

char *ruby_no_method(const char *method, const char *inspect, const char *class_name)
{
    if (current == RUBY_31)
        return xasprintf("undefined method `%s' for %s:%s", method, inspect, class_name);
    /* Ruby 3.3 (NameError#message, error.c name_err_mesg_to_str): nil, true and false by name,
     * anything else as an instance of its class */
    if (!strcmp(class_name, "NilClass") || !strcmp(class_name, "TrueClass") || !strcmp(class_name, "FalseClass"))
        return xasprintf("undefined method `%s' for %s", method, inspect);
    return xasprintf("undefined method `%s' for an instance of %s", method, class_name);
}
