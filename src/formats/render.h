/* render.h - text forms of values: what `puppet lookup --render-as json|yaml|s` prints, Ruby's
 * inspect/to_s (used by interpolation), and Puppet's explain value dumper. */
#ifndef HIERA_RENDER_H
#define HIERA_RENDER_H

#include "base/util.h"
#include "base/value.h"

/* `puppet lookup --render-as json` output for v, without the trailing newline puppet adds.
 * Returns 0, or -1 with err set (HERR_ERROR, e.g. "1000: Infinity not allowed in JSON"). */
int render_json(sbuf *out, const hv *v, herr *err);
/* render_json remembering, in jm, the text of every stable container (value.h) it renders and
 * writing it again from there: merged results share their stable parts between nodes. jm holds
 * a reference on each container it remembers (so that its address stays its own) and belongs to
 * one thread, as the values do. At most 32 MiB of text is kept. */
typedef struct json_memo json_memo;
json_memo *json_memo_new(void);
void json_memo_free(json_memo *jm);
int render_json_memo(sbuf *out, const hv *v, json_memo *jm, herr *err);
/* `--render-as yaml` (puppet's default) output for v, including the "---" header and the final
 * newline exactly as puppet prints it. */
int render_yaml(sbuf *out, const hv *v, herr *err);
/* render_yaml, but a container that appears more than once (the same object, as in an
 * explanation tree where a found value is also the merged result) gets an anchor and aliases,
 * as Ruby's to_yaml does for shared objects. */
int render_yaml_shared(sbuf *out, const hv *v, herr *err);
/* `--render-as s` output for v (Ruby to_s of the value), without the final newline. */
int render_s(sbuf *out, const hv *v, herr *err);

/* Ruby's Object#inspect of the value: {"a"=>1, "b"=>[nil, true, 1.5]}. */
void ruby_inspect(sbuf *out, const hv *v);
/* Ruby's String#inspect of a UTF-8 string ("a\u2028\xFF\n"). */
void ruby_inspect_string(sbuf *out, const char *s, size_t n);
/* Ruby's to_s: strings verbatim, nil as "", others as inspect. */
void ruby_to_s(sbuf *out, const hv *v);
/* Ruby's Float#to_s: 1.0, 0.0001, 1.0e-05, 1.0e+16, Infinity, -Infinity, NaN. */
void ruby_float_to_s(sbuf *out, double d);

/* Ruby's v.class.name, for messages: NilClass, TrueClass, FalseClass, Integer, Float, String,
 * Array, Hash, Symbol, Puppet::Pops::Types::PSensitiveType::Sensitive (NULL is nil). */
const char *ruby_class_name(const hv *v);
/* The name in Ruby's "no implicit conversion of X into Y" (rb_builtin_class_name): "nil", "true"
 * and "false" for those values, else ruby_class_name. */
const char *ruby_conversion_name(const hv *v);

/* The value as Puppet's lookup explainer prints it after "value: " (hashes as {\n "k" => v,\n}
 * with two spaces per level relative to `indent`, which is the indentation of the line the value
 * starts on). */
void render_explain_value(sbuf *out, const hv *v, int indent);

#endif
