/* emit.h - values written as YAML text that Puppet's YAML loader (formats/psych.h) reads back as
 * the same values (emit.c): for the editor, which writes one entry of a file people wrote.
 *
 * Scalars keep the style asked for when the value allows it (a plain string stays plain unless
 * Psych would read the plain text as something else: `yes`, `1.10`, `:sym`, `2024-01-01`...);
 * collections are written in block style at the indentation given, or in flow style where the
 * entry replaced was in flow style. Every text written is checked against the loader's own rules
 * for plain scalars (yaml_plain_scalar); what cannot be written (a Sensitive value, text that is
 * not UTF-8) is an error. */
#ifndef HIERA_EDIT_EMIT_H
#define HIERA_EDIT_EMIT_H

#include <stdbool.h>
#include <stddef.h>

#include "base/util.h"
#include "base/value.h"

/* The scalar styles a value may be asked to keep (libyaml's: yaml_scalar_style_t's order). */
typedef enum {
    EMIT_ANY = 0,
    EMIT_PLAIN = 1,
    EMIT_SINGLE = 2,
    EMIT_DOUBLE = 3,
    EMIT_LITERAL = 4,
    EMIT_FOLDED = 5,
} emit_scalar_style;

/* How the file is written: its line break, and its indentation habits. */
typedef struct {
    const char *eol;   /* "\n" or "\r\n" */
    size_t step;       /* a nested mapping's keys: this many spaces further in (default 2) */
    size_t seq_indent; /* a block sequence under a mapping key: this many spaces further in (0 or step) */
    bool no_block;     /* strings of several lines in double quotes, never as block scalars */
} emit_style;

/* Appends to out what follows a mapping key's ':' for v, the key being at indentation ind: " text"
 * (a scalar, an empty or flow collection, a block scalar's header followed by its lines) or eol and
 * the lines of a block collection (no line break after the last line). style: the scalar style
 * to keep when v is a string; flow: write a collection in flow style. false with err when v cannot
 * be written. */
bool emit_after_key(sbuf *out, const hv *v, size_t ind, const emit_style *st, emit_scalar_style style, bool flow,
                    herr *err);

/* Appends the lines of v as a block collection at indentation ind (a hash: its entries; an array:
 * its items), separated by eol, without a line break after the last one; the first line without
 * its indentation when first_indented is false. v must be a non-empty hash or array. */
bool emit_block(sbuf *out, const hv *v, size_t ind, const emit_style *st, bool first_indented, herr *err);

/* Appends a mapping key (a string written plain when it can be, else quoted; an integer...). */
bool emit_key(sbuf *out, const hv *key, herr *err);

/* Whether v is written on the line of its key (a scalar, an empty collection, a flow one). */
bool emit_is_inline(const hv *v, bool flow);

#endif
