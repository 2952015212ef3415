/* test_ptype.c - unit tests of src/types (ptype.h): parsing type expressions (valid and invalid), matching
 * values, TypeMismatchDescriber messages, new() conversions for convert_to, and String.new
 * formatting. Every expectation in the tables was recorded from Puppet 7.23 (Ruby API calls with a
 * loader, as convert_to and Hiera's own type checks use, and `puppet lookup --type` runs for the
 * command line behaviour).
 *
 * Values are written as JSON; {"__sensitive__": v} stands for Sensitive(v), {"__sym__": "n"} for
 * the Ruby Symbol :n and {"__big__": "digits"} for an integer beyond 64 bits. */
#include "testutil.h"

#include "types/ptype.h"
#include "types/types_int.h"

/* The `puppet lookup --type` parser (declared in ptype.h, defined in interpret.c). */
ptype *ptype_parse_cli(const char *text, herr *err);

static hv *fix_markers(hv *v)
{
    if (hv_is(v, HV_ARRAY)) {
        for (size_t i = 0; i < hv_array_len(v); i++)
            hv_array_set(v, i, fix_markers(hv_incref(hv_array_get(v, i))));
        return v;
    }
    if (!hv_is(v, HV_HASH))
        return v;
    if (hv_hash_len(v) == 1) {
        hv *x;
        if ((x = hv_hash_gets(v, "__sensitive__"))) {
            hv *r = hv_sensitive_new(fix_markers(hv_incref(x)));
            hv_decref(v);
            return r;
        }
        if ((x = hv_hash_gets(v, "__sym__"))) {
            hv *r = hv_symbol(hv_str_ptr(x), hv_str_len(x));
            hv_decref(v);
            return r;
        }
        if ((x = hv_hash_gets(v, "__big__"))) {
            hv *r = hv_bigint(hv_str_ptr(x), hv_str_len(x));
            hv_decref(v);
            return r;
        }
    }
    hv *n = hv_hash();
    for (size_t i = 0; i < hv_hash_len(v); i++)
        hv_hash_set(n, fix_markers(hv_incref(hv_hash_key_at(v, i))), fix_markers(hv_incref(hv_hash_val_at(v, i))));
    hv_decref(v);
    return n;
}

static hv *val(const char *json)
{
    herr e = {0};
    hv *v = hjson_parse(json, strlen(json), "<test>", &e);
    if (!v) {
        print_error("bad test JSON %s: %s\n", json, e.msg);
        herr_clear(&e);
        fail();
    }
    return fix_markers(v);
}

/* What Puppet answered for a type and a value: "OK <type>" when the value is an instance,
 * "ERR <type>: <TypeAsserter message>" when not, "PARSE ERROR: <message>" for a bad type. */
static char *check_line(ptype *(*parse)(const char *, herr *), const char *type, const char *json)
{
    herr e = {0};
    ptype *t = parse(type, &e);
    if (!t) {
        char *r = xasprintf("PARSE ERROR: %s", e.msg);
        herr_clear(&e);
        return r;
    }
    hv *v = val(json);
    char *ts = ptype_to_s(t), *r;
    if (ptype_match(t, v)) {
        r = xasprintf("OK %s", ts);
    } else {
        char *m = ptype_mismatch(t, v, "Found value");
        r = xasprintf("ERR %s: %s", ts, m);
        free(m);
    }
    free(ts);
    hv_decref(v);
    ptype_free(t);
    return r;
}

struct type_case {
    const char *type, *value, *expected;
};

/* Parsing, printing, matching and mismatch messages (Puppet's TypeParser with a loader,
 * instance?, TypeAsserter.assert_instance_of('Found value', ...)). */
static const struct type_case type_cases[] = {
    {"Integer", "\"a\"", "ERR Integer: Found value has wrong type, expects an Integer value, got String"},
    {"Integer", "1", "OK Integer"},
    {"Integer", "1.5", "ERR Integer: Found value has wrong type, expects an Integer value, got Float"},
    {"Float", "1", "ERR Float: Found value has wrong type, expects a Float value, got Integer"},
    {"Float", "1.5", "OK Float"},
    {"String", "1", "ERR String: Found value has wrong type, expects a String value, got Integer"},
    {"String", "\"x\"", "OK String"},
    {"String", "null", "ERR String: Found value has wrong type, expects a String value, got Undef"},
    {"Optional[String]", "null", "OK Optional[String]"},
    {"Optional[String]", "1", "ERR Optional[String]: Found value has wrong type, expects a value of type Undef or String, got Integer"},
    {"Array[String]", "[\"a\", 1]", "ERR Array[String]: Found value has wrong type, index 1 expects a String value, got Integer"},
    {"Array[String]", "[\"a\", \"b\"]", "OK Array[String]"},
    {"Array[String]", "[]", "OK Array[String]"},
    {"Array[String, 1]", "[]", "ERR Array[String, 1]: Found value has wrong type, expects size to be at least 1, got 0"},
    {"Array[String, 2, 3]", "[\"a\"]", "ERR Array[String, 2, 3]: Found value has wrong type, expects size to be between 2 and 3, got 1"},
    {"Hash[String, Integer]", "{\"a\": \"1\"}", "ERR Hash[String, Integer]: Found value has wrong type, entry 'a' expects an Integer value, got String"},
    {"Hash[String, Integer]", "{\"a\": 1}", "OK Hash[String, Integer]"},
    {"Hash[Integer, Integer]", "{\"a\": 1}", "ERR Hash[Integer, Integer]: Found value has wrong type, key of entry 'a' expects an Integer value, got String"},
    {"Hash[String, Integer, 2]", "{\"a\": 1}", "ERR Hash[String, Integer, 2]: Found value has wrong type, expects size to be at least 2, got 1"},
    {"Enum[debug, warn]", "\"info\"", "ERR Enum['debug', 'warn']: Found value has wrong type, expects a match for Enum['debug', 'warn'], got 'info'"},
    {"Enum[debug, warn]", "\"warn\"", "OK Enum['debug', 'warn']"},
    {"Enum[debug, warn]", "5", "ERR Enum['debug', 'warn']: Found value has wrong type, expects a match for Enum['debug', 'warn'], got Integer"},
    {"Enum[a, true]", "\"A\"", "OK Enum['a', true]"},
    {"Pattern[/^a/, 'b$']", "\"xb\"", "OK Pattern[/^a/, /b$/]"},
    {"Pattern[/^a/, 'b$']", "\"xc\"", "ERR Pattern[/^a/, /b$/]: Found value has wrong type, expects a match for Pattern[/^a/, /b$/], got 'xc'"},
    {"Pattern[/^a/]", "5", "ERR Pattern[/^a/]: Found value has wrong type, expects a match for Pattern[/^a/], got Integer"},
    {"Variant[Integer, String]", "1.5", "ERR Variant[Integer, String]: Found value has wrong type, expects a value of type Integer or String, got Float"},
    {"Variant[Integer, String]", "[1]", "ERR Variant[Integer, String]: Found value has wrong type, expects a value of type Integer or String, got Tuple"},
    {"Variant[Integer[0,5], Integer[10,20]]", "7", "ERR Variant[Integer[0, 5], Integer[10, 20]]: Found value has wrong type, expects a value of type Integer[0, 5] or Integer[10, 20], got Integer[7, 7]"},
    {"Variant[String[1], Integer]", "\"\"", "ERR Variant[String[1], Integer]: Found value has wrong type, expects a value of type String[1] or Integer, got String"},
    {"Integer[0, 10]", "20", "ERR Integer[0, 10]: Found value has wrong type, expects an Integer[0, 10] value, got Integer[20, 20]"},
    {"Integer[default, 5]", "20", "ERR Integer[default, 5]: Found value has wrong type, expects an Integer[default, 5] value, got Integer[20, 20]"},
    {"Integer[-5, -1]", "0", "ERR Integer[-5, -1]: Found value has wrong type, expects an Integer[-5, -1] value, got Integer[0, 0]"},
    {"Integer[16]", "1", "ERR Integer[16]: Found value has wrong type, expects an Integer[16] value, got Integer[1, 1]"},
    {"Float[1.5]", "1.0", "ERR Float[1.5]: Found value has wrong type, expects a Float[1.5] value, got Float[1.0, 1.0]"},
    {"Float[1, 2]", "3.0", "ERR Float[1.0, 2.0]: Found value has wrong type, expects a Float[1.0, 2.0] value, got Float[3.0, 3.0]"},
    {"String[2]", "\"a\"", "ERR String[2]: Found value has wrong type, expects a String[2] value, got String"},
    {"String[1, 3]", "\"abcd\"", "ERR String[1, 3]: Found value has wrong type, expects a String[1, 3] value, got String"},
    {"Tuple[String, Integer]", "[\"a\", \"b\"]", "ERR Tuple[String, Integer]: Found value has wrong type, index 1 expects an Integer value, got String"},
    {"Tuple[String, Integer]", "[\"a\"]", "ERR Tuple[String, Integer]: Found value has wrong type, expects size to be 2, got 1"},
    {"Tuple[String, Integer]", "[\"a\", 1, 2]", "ERR Tuple[String, Integer]: Found value has wrong type, expects size to be 2, got 3"},
    {"Tuple[String, Integer, 1, 3]", "[\"a\", 1, 2, 3]", "ERR Tuple[String, Integer, 1, 3]: Found value has wrong type, expects size to be between 1 and 3, got 4"},
    {"Tuple[String, Integer, 1, 3]", "[\"a\", 1, 2]", "OK Tuple[String, Integer, 1, 3]"},
    {"Struct[{a => Integer, Optional[b] => String}]", "{\"a\": 1}", "OK Struct[{'a' => Integer, Optional['b'] => String}]"},
    {"Struct[{a => Integer, Optional[b] => String}]", "{\"a\": \"x\"}", "ERR Struct[{'a' => Integer, Optional['b'] => String}]: Found value has wrong type, entry 'a' expects an Integer value, got String"},
    {"Struct[{a => Integer, Optional[b] => String}]", "{\"b\": \"x\"}", "ERR Struct[{'a' => Integer, Optional['b'] => String}]: Found value has wrong type, expects a value for key 'a'"},
    {"Struct[{a => Integer, Optional[b] => String}]", "{\"a\": 1, \"c\": 2}", "ERR Struct[{'a' => Integer, Optional['b'] => String}]: Found value has wrong type, unrecognized key 'c'"},
    {"Struct[{a => Integer, Optional[b] => String}]", "{\"a\": 1, \"b\": 2}", "ERR Struct[{'a' => Integer, Optional['b'] => String}]: Found value has wrong type, entry 'b' expects a String value, got Integer"},
    {"Struct[{'a' => Integer, \"b\" => Optional[String]}]", "{\"a\": 1}", "OK Struct[{'a' => Integer, 'b' => Optional[String]}]"},
    {"Struct[{a => Integer}]", "[1]", "ERR Struct[{'a' => Integer}]: Found value has wrong type, expects a Struct value, got Tuple"},
    {"Struct[{a => Integer}]", "{}", "ERR Struct[{'a' => Integer}]: Found value has wrong type, expects size to be 1, got 0"},
    {"Struct[{a => Integer}]", "{\"1\": 1, \"2\": 2}", "ERR Struct[{'a' => Integer}]:  Found value has wrong type, expects a value for key 'a'\n  Found value has wrong type, unrecognized key '1'\n  Found value has wrong type, unrecognized key '2'"},
    {"Boolean", "\"true\"", "ERR Boolean: Found value has wrong type, expects a Boolean value, got String"},
    {"Boolean[true]", "false", "ERR Boolean[true]: Found value has wrong type, expects a Boolean[true] value, got Boolean[false]"},
    {"Undef", "1", "ERR Undef: Found value has wrong type, expects an Undef value, got Integer"},
    {"NotUndef", "null", "ERR NotUndef: Found value has wrong type, expects a NotUndef value, got Undef"},
    {"NotUndef[String]", "1", "ERR NotUndef[String]: Found value has wrong type, expects a String value, got Integer"},
    {"Any", "null", "OK Any"},
    {"Scalar", "[1]", "ERR Scalar: Found value has wrong type, expects a Scalar value, got Tuple"},
    {"Scalar", "null", "ERR Scalar: Found value has wrong type, expects a Scalar value, got Undef"},
    {"ScalarData", "1.5", "OK ScalarData"},
    {"Numeric", "\"1\"", "ERR Numeric: Found value has wrong type, expects a Numeric value, got String"},
    {"Collection", "\"x\"", "ERR Collection: Found value has wrong type, expects a Collection value, got String"},
    {"Collection[1]", "[]", "ERR Collection[1]: "},
    {"Array", "{\"a\": 1}", "ERR Array: Found value has wrong type, expects an Array value, got Struct"},
    {"Hash", "[1]", "ERR Hash: Found value has wrong type, expects a Hash value, got Tuple"},
    {"Hash", "[]", "ERR Hash: Found value has wrong type, expects a Hash value, got Array"},
    {"Array[Integer]", "{\"a\": 1}", "ERR Array[Integer]: Found value has wrong type, expects an Array value, got Struct"},
    {"Array[Array[Integer]]", "[[1, \"x\"]]", "ERR Array[Array[Integer]]: Found value has wrong type, index 0 index 1 expects an Integer value, got String"},
    {"Hash[String, Array[Integer]]", "{\"a\": [1, \"x\"], \"b\": [\"y\"]}", "ERR Hash[String, Array[Integer]]:  Found value has wrong type, entry 'a' index 1 expects an Integer value, got String\n  Found value has wrong type, entry 'b' index 0 expects an Integer value, got String"},
    {"Sensitive", "\"x\"", "ERR Sensitive: Found value has wrong type, expects a Sensitive value, got String"},
    {"Sensitive[String]", "{\"__sensitive__\": \"x\"}", "OK Sensitive[String]"},
    {"Sensitive[Integer]", "{\"__sensitive__\": \"x\"}", "ERR Sensitive[Integer]: Found value has wrong type, expects a Sensitive[Integer] value, got Sensitive[String]"},
    {"String", "{\"__sensitive__\": \"x\"}", "ERR String: Found value has wrong type, expects a String value, got Sensitive[String]"},
    {"String", "{\"__sensitive__\": [1, \"a\"]}", "ERR String: Found value has wrong type, expects a String value, got Sensitive[Array]"},
    {"String", "{\"__sensitive__\": [1, [2]]}", "ERR String: Found value has wrong type, expects a String value, got Sensitive[Array]"},
    {"String", "{\"__sensitive__\": {\"a\": 1}}", "ERR String: Found value has wrong type, expects a String value, got Sensitive[Hash]"},
    {"Integer", "{\"__sym__\": \"foo\"}", "ERR Integer: Found value has wrong type, expects an Integer value, got Runtime"},
    {"Any", "{\"__sym__\": \"foo\"}", "OK Any"},
    {"Optional[Integer]", "{\"__sym__\": \"undef\"}", "OK Optional[Integer]"},
    {"Runtime", "{\"__sym__\": \"foo\"}", "OK Runtime"},
    {"Integer", "{\"__big__\": \"123456789012345678901234567890\"}", "OK Integer"},
    {"Integer[0, 10]", "{\"__big__\": \"123456789012345678901234567890\"}", "ERR Integer[0, 10]: Found value has wrong type, expects an Integer[0, 10] value, got Integer[123456789012345678901234567890, 123456789012345678901234567890]"},
    {"Float", "{\"__big__\": \"-123456789012345678901234567890\"}", "ERR Float: Found value has wrong type, expects a Float value, got Integer"},
    {"Variant[Enum[a, b], Enum[c]]", "\"d\"", "ERR Variant[Enum['a', 'b'], Enum['c']]: Found value has wrong type, expects a match for Enum['a', 'b', 'c'], got 'd'"},
    {"Optional[Enum[a, b]]", "\"d\"", "ERR Optional[Enum['a', 'b']]: Found value has wrong type, expects an undef value or a match for Enum['a', 'b'], got 'd'"},
    {"Optional[Pattern[/x/]]", "\"d\"", "ERR Optional[Pattern[/x/]]: Found value has wrong type, expects an undef value or a match for Pattern[/x/], got 'd'"},
    {"Variant[Undef, Integer, String]", "1.5", "ERR Variant[Undef, Integer, String]: Found value has wrong type, expects a value of type Undef, Integer, or String, got Float"},
    {"Variant[Integer, Float, Boolean]", "\"x\"", "ERR Variant[Integer, Float, Boolean]: Found value has wrong type, expects a value of type Integer, Float, or Boolean, got String"},
    {"Variant[Array[Integer], Hash[String, Integer]]", "[\"x\"]", "ERR Variant[Array[Integer], Hash[String, Integer]]:  Found value has wrong type, variant 0 index 0 expects an Integer value, got String\n  Found value has wrong type, variant 1 expects a Hash value, got Tuple"},
    {"Variant[Array[Integer, 2], Array[String, 3]]", "[1]", "ERR Variant[Array[Integer, 2], Array[String, 3]]: Found value has wrong type, expects size to be at least 2, got 1"},
    {"Variant[Struct[{a => Integer}], Struct[{b => Integer}]]", "{\"c\": 1}", "ERR Variant[Struct[{'a' => Integer}], Struct[{'b' => Integer}]]:  Found value has wrong type, variant 0 expects a value for key 'a'\n  Found value has wrong type, variant 0 unrecognized key 'c'\n  Found value has wrong type, variant 1 expects a value for key 'b'\n  Found value has wrong type, variant 1 unrecognized key 'c'"},
    {"Array[Variant[Integer, String]]", "[1, 2.5]", "ERR Array[Variant[Integer, String]]: Found value has wrong type, index 1 expects a value of type Integer or String, got Float"},
    {"Hash[Enum[a, b], Integer]", "{\"c\": 1}", "ERR Hash[Enum['a', 'b'], Integer]: Found value has wrong type, key of entry 'c' expects a match for Enum['a', 'b'], got 'c'"},
    {"Hash[Pattern[/^a/], Integer]", "{\"c\": 1}", "ERR Hash[Pattern[/^a/], Integer]: Found value has wrong type, key of entry 'c' expects a match for Pattern[/^a/], got 'c'"},
    {"Hash[String[2], Integer]", "{\"c\": 1}", "ERR Hash[String[2], Integer]: Found value has wrong type, key of entry 'c' expects a String[2] value, got String"},
    {"Iterable", "1", "OK Iterable"},
    {"Iterable", "1.5", "ERR Iterable: Found value has wrong type, expects an Iterable value, got Float"},
    {"Iterable[String]", "[\"a\"]", "OK Iterable[String]"},
    {"Iterable[String]", "[1]", "ERR Iterable[String]: Found value has wrong type, expects an Iterable[String] value, got Tuple"},
    {"Iterable[Integer]", "5", "OK Iterable[Integer]"},
    {"Type", "1", "ERR Type: Found value has wrong type, expects a Type value, got Integer"},
    {"Default", "1", "ERR Default: Found value has wrong type, expects a Default value, got Integer"},
    {"Regexp", "\"a\"", "ERR Regexp: Found value has wrong type, expects a Regexp value, got String"},
    {"Callable", "1", "ERR Callable: Found value has wrong type, expects a Callable value, got Integer"},
    {"Tuple", "[1, \"a\"]", "OK Tuple"},
    {"Tuple", "\"x\"", "ERR Tuple: Found value has wrong type, expects a Tuple value, got String"},
    {"Struct", "{}", "OK Struct"},
    {"Struct", "{\"a\": 1}", "ERR Struct: Found value has wrong type, unrecognized key 'a'"},
    {"Optional", "1", "ERR Optional: "},
    {"Variant", "1", "ERR Variant: "},
    {"String", "[\"a\", {\"b\": [1, null]}]", "ERR String: Found value has wrong type, expects a String value, got Tuple"},
    {"Integer", "[]", "ERR Integer: Found value has wrong type, expects an Integer value, got Array"},
    {"Integer", "{}", "ERR Integer: Found value has wrong type, expects an Integer value, got Hash"},
    {"Integer", "{\"1\": 2}", "ERR Integer: Found value has wrong type, expects an Integer value, got Struct"},
    {"Integer", "[[]]", "ERR Integer: Found value has wrong type, expects an Integer value, got Tuple"},
    {"Array[Integer, 0, 0]", "[1]", "ERR Array[0, 0]: Found value has wrong type, expects size to be 0, got 1"},
    {"Array[0, 0]", "[1]", "ERR Array[0, 0]: Found value has wrong type, expects size to be 0, got 1"},
    {"Hash[String, String, 1, 1]", "{}", "ERR Hash[String, String, 1, 1]: Found value has wrong type, expects size to be 1, got 0"},
    {"Optional[Array[String]]", "[1]", "ERR Optional[Array[String]]: Found value has wrong type, index 0 expects a String value, got Integer"},
    {"NotUndef[Array[String]]", "[1]", "ERR NotUndef[Array[String]]: Found value has wrong type, index 0 expects a String value, got Integer"},
    {"Array[Optional[String]]", "[1]", "ERR Array[Optional[String]]: Found value has wrong type, index 0 expects a value of type Undef or String, got Integer"},
    {"Tuple[Optional[String], Integer]", "[1]", "ERR Tuple[Optional[String], Integer]: Found value has wrong type, expects size to be 2, got 1"},
    {"Struct[{a => Optional[Integer]}]", "{\"a\": \"x\"}", "ERR Struct[{'a' => Optional[Integer]}]: Found value has wrong type, entry 'a' expects a value of type Undef or Integer, got String"},
    {"Struct[{a => Optional[Integer]}]", "{}", "OK Struct[{'a' => Optional[Integer]}]"},
    {"Struct[{Optional[a] => Integer}]", "{\"a\": null}", "ERR Struct[{Optional['a'] => Integer}]: Found value has wrong type, entry 'a' expects an Integer value, got Undef"},
    {"Enum['a b', \"c'd\"]", "\"x\"", "ERR Enum['a b', 'c\\'d']: Found value has wrong type, expects a match for Enum['a b', 'c\\'d'], got 'x'"},
    {"Enum[\"tab\\there\"]", "\"x\"", "ERR Enum[\"tab\\there\"]: Found value has wrong type, expects a match for Enum[\"tab\\there\"], got 'x'"},
    {"Pattern['a/b']", "\"x\"", "ERR Pattern[/a\\/b/]: Found value has wrong type, expects a match for Pattern[/a\\/b/], got 'x'"},
    {"Variant[String, Integer, Boolean, Undef]", "1.5", "ERR Variant[String, Integer, Boolean, Undef]: Found value has wrong type, expects a value of type Undef, String, Integer, or Boolean, got Float"},
    {"Data", "1", "OK Data"},
    {"INTEGER", "\"x\"", "ERR Integer: Found value has wrong type, expects an Integer value, got String"},
    {"::Integer", "\"x\"", "ERR Integer: Found value has wrong type, expects an Integer value, got String"},
    {"Integer", "\" \"", "ERR Integer: Found value has wrong type, expects an Integer value, got String"},
    {"String[0]", "\"x\"", "OK String[0]"},
    {"Collection[2, 3]", "[1]", "ERR Collection[2, 3]: "},
    {"Collection[2, 3]", "{\"a\": 1}", "ERR Collection[2, 3]: "},
    {"Variant[Collection[2], String]", "[1]", "ERR Variant[Collection[2], String]: "},
    {"Array[Struct[{a => Integer}]]", "[{\"a\": \"x\"}, {\"b\": 1}]", "ERR Array[Struct[{'a' => Integer}]]:  Found value has wrong type, index 0 entry 'a' expects an Integer value, got String\n  Found value has wrong type, index 1 expects a value for key 'a'\n  Found value has wrong type, index 1 unrecognized key 'b'"},
    {"Integer[", "1", "PARSE ERROR: Syntax error at end of input"},
    {"Integer[1,2", "1", "PARSE ERROR: Syntax error at end of input"},
    {"integer", "1", "PARSE ERROR: The expression <integer> is not a valid type specification."},
    {"Integer[1,2,3]", "1", "PARSE ERROR: Invalid number of type parameters specified: Integer requires 1 or 2, 3 provided"},
    {"foo::bar", "1", "PARSE ERROR: The expression <foo::bar> is not a valid type specification."},
    {"Integer[a]", "1", "PARSE ERROR: The expression <Integer[a]> is not a valid type specification."},
    {"Enum[a, \"b\", 'c']", "1", "ERR Enum['a', 'b', 'c']: Found value has wrong type, expects a match for Enum['a', 'b', 'c'], got Integer"},
    {"Enum[1]", "1", "PARSE ERROR: Enum parameters must be identifiers or strings"},
    {"Hash[String]", "1", "PARSE ERROR: Invalid number of type parameters specified: Hash requires 2 to 4, 1 provided"},
    {"1", "1", "PARSE ERROR: The expression <1> is not a valid type specification."},
    {"\"x\"", "1", "PARSE ERROR: The expression <\"x\"> is not a valid type specification."},
    {"Integer]", "1", "PARSE ERROR: Syntax error at ']' (line: 1, column: 8)"},
    {"", "1", "PARSE ERROR: The expression <> is not a valid type specification."},
    {"Integer Integer", "1", "PARSE ERROR: The expression <Integer Integer> is not a valid type specification."},
    {"Integer[1+1]", "1", "PARSE ERROR: The expression <1+1> is not a valid type specification."},
    {"Struct[{a => Integer}]", "1", "ERR Struct[{'a' => Integer}]: Found value has wrong type, expects a Struct value, got Integer"},
    {"Struct[a]", "1", "PARSE ERROR: The expression <Struct[a]> is not a valid type specification."},
    {"Pattern[/a(/]", "1", "PARSE ERROR: end pattern with unmatched parenthesis: /a(/"},
    {"Data[1]", "1", "PARSE ERROR: Not a parameterized type <Data>"},
    {"Integer[2,1]", "1", "PARSE ERROR: 'from' must be less or equal to 'to'. Got (2, 1"},
    {"Optional[String, Integer]", "1", "PARSE ERROR: Invalid number of type parameters specified: Optional requires 1, 2 provided"},
    {"Array[1,2,3]", "1", "PARSE ERROR: The expression <Array[1,2,3]> is not a valid type specification."},
    {"Variant[]", "1", "PARSE ERROR: Syntax error at ']' (line: 1, column: 9)"},
    {"Tuple[]", "1", "PARSE ERROR: Syntax error at ']' (line: 1, column: 7)"},
    {"Callable[1]", "1", "ERR Callable[1]: Found value has wrong type, expects a Callable value, got Integer"},
    {"$x", "1", "PARSE ERROR: The expression <$x> is not a valid type specification."},
    {"Integer[$x]", "1", "PARSE ERROR: The expression <$x> is not a valid type specification."},
    {"Enum[\"a${x}\"]", "1", "PARSE ERROR: The expression <\"a${x}\"> is not a valid type specification."},
    {"Enum[\"a$x\"]", "1", "PARSE ERROR: The expression <\"a$x\"> is not a valid type specification."},
    {"Enum[\"a$\"]", "1", "ERR Enum['a$']: Found value has wrong type, expects a match for Enum['a$'], got Integer"},
    {"Boolean[1]", "1", "PARSE ERROR: Boolean parameter must be true or false"},
    {"Float[a]", "1", "PARSE ERROR: The expression <Float[a]> is not a valid type specification."},
    {"Integer[1.5]", "1", "PARSE ERROR: The expression <Integer[1.5]> is not a valid type specification."},
    {"Integer[1 2]", "1", "PARSE ERROR: Syntax error at '2' (line: 1, column: 11)"},
    {"Integer[1,,2]", "1", "PARSE ERROR: Syntax error at ',' (line: 1, column: 11)"},
    {"Hash[String,]", "1", "PARSE ERROR: Invalid number of type parameters specified: Hash requires 2 to 4, 1 provided"},
    {"[String]", "1", "PARSE ERROR: The expression <[String]> is not a valid type specification."},
    {"Integer[1,2],", "1", "PARSE ERROR: Syntax error at end of input"},
    {"Enum['a", "1", "PARSE ERROR: Unclosed quote after \"'\" followed by 'a...' (line: 1, column: 7)"},
    {"Enum[\"a", "1", "PARSE ERROR: Unclosed quote after '\"' followed by 'a...' (line: 1, column: 7)"},
    {"Integer[0x10]", "1", "ERR Integer[16]: Found value has wrong type, expects an Integer[16] value, got Integer[1, 1]"},
    {"Integer[010]", "1", "ERR Integer[8]: Found value has wrong type, expects an Integer[8] value, got Integer[1, 1]"},
    {"Integer[09]", "1", "PARSE ERROR: Not a valid octal number 09 (line: 1, column: 9)"},
    {"Integer[1e3]", "1", "PARSE ERROR: The expression <Integer[1e3]> is not a valid type specification."},
    {"Integer[-1,- 5]", "1", "PARSE ERROR: 'from' must be less or equal to 'to'. Got (-1, -5"},
    {"Integer[-1, -0x5]", "1", "PARSE ERROR: 'from' must be less or equal to 'to'. Got (-1, -5"},
    {"Struct[a => Integer]", "1", "ERR Struct[{'a' => Integer}]: Found value has wrong type, expects a Struct value, got Integer"},
    {"Struct[{\"a\" => Integer, Optional[b] => String}]", "1", "ERR Struct[{'a' => Integer, Optional['b'] => String}]: Found value has wrong type, expects a Struct value, got Integer"},
    {"Enum[a-b]", "1", "ERR Enum['a-b']: Found value has wrong type, expects a match for Enum['a-b'], got Integer"},
    {"Enum[a::b]", "1", "ERR Enum['a::b']: Found value has wrong type, expects a match for Enum['a::b'], got Integer"},
    {"Enum[A]", "1", "PARSE ERROR: Enum parameters must be identifiers or strings"},
    {"Integer [1]", "1", "PARSE ERROR: The expression <Integer [1]> is not a valid type specification."},
    {"Integer[1]]", "1", "PARSE ERROR: Syntax error at ']' (line: 1, column: 11)"},
    {"String[1,2,]", "1", "ERR String[1, 2]: Found value has wrong type, expects a String value, got Integer"},
    {"Integer(1)", "1", "PARSE ERROR: The expression <Integer(1)> is not a valid type specification."},
    {"Integer{}", "1", "PARSE ERROR: The expression <Integer{}> is not a valid type specification."},
    {"Integer[1]{}", "1", "PARSE ERROR: The expression <Integer[1]{}> is not a valid type specification."},
    {"Integer#foo", "1", "OK Integer"},
    {"Enum[\" a\\n\\t\"]", "1", "ERR Enum[\" a\\n\\t\"]: Found value has wrong type, expects a match for Enum[\" a\\n\\t\"], got Integer"},
    {"Pattern[/a\\/b/, \"c/d\"]", "1", "ERR Pattern[/a\\/b/, /c\\/d/]: Found value has wrong type, expects a match for Pattern[/a\\/b/, /c\\/d/], got Integer"},
    {"Pattern[/a/ /b/]", "1", "PARSE ERROR: Syntax error at ']' (line: 1, column: 16)"},
    {"Enum[true]", "1", "PARSE ERROR: Invalid number of type parameters specified: Enum requires 1 or more, 0 provided"},
    {"Enum[a, true]", "1", "ERR Enum['a', true]: Found value has wrong type, expects a match for Enum['a', true], got Integer"},
    {"Tuple[Integer, 1, 2]", "1", "ERR Tuple[Integer, 1, 2]: Found value has wrong type, expects a Tuple value, got Integer"},
    {"Tuple[Integer, default]", "1", "ERR Tuple[Integer, 0]: Found value has wrong type, expects a Tuple value, got Integer"},
    {"Tuple[1]", "1", "ERR Tuple: Found value has wrong type, expects a Tuple value, got Integer"},
    {"Tuple[\"a\"]", "1", "ERR Tuple[Runtime[ruby, 'a']]: Found value has wrong type, expects a Tuple value, got Integer"},
    {"Hash[1,2]", "1", "ERR Hash[Default, Default, 1, 2]: Found value has wrong type, expects a Hash value, got Integer"},
    {"Array[1]", "1", "ERR Array[Any, 1]: Found value has wrong type, expects an Array value, got Integer"},
    {"Array[2]", "1", "PARSE ERROR: The expression <Array[2]> is not a valid type specification."},
    {"Array[1,2]", "1", "ERR Array[Default, 1, 2]: Found value has wrong type, expects an Array value, got Integer"},
    {"Array[Integer, default, 3]", "1", "ERR Array[Integer, 0, 3]: Found value has wrong type, expects an Array value, got Integer"},
    {"Collection[default,3]", "1", "ERR Collection[0, 3]: Found value has wrong type, expects a Collection value, got Integer"},
    {"String[-1,3]", "1", "ERR String[0, 3]: Found value has wrong type, expects a String value, got Integer"},
    {"Integer[default]", "1", "OK Integer"},
    {"Integer[default, default]", "1", "OK Integer"},
    {"Float[1, 2]", "1", "ERR Float[1.0, 2.0]: Found value has wrong type, expects a Float value, got Integer"},
    {"Float[default, 2.5]", "1", "ERR Float[default, 2.5]: Found value has wrong type, expects a Float value, got Integer"},
    {"Float[1.5]", "1", "ERR Float[1.5]: Found value has wrong type, expects a Float value, got Integer"},
    {"Optional[Undef]", "1", "ERR Optional[Undef]: Found value has wrong type, expects an Undef value, got Integer"},
    {"NotUndef[Undef]", "1", "ERR NotUndef[Undef]: Found value has wrong type, expects a NotUndef[Undef] value, got Integer"},
    {"NotUndef[String]", "1", "ERR NotUndef[String]: Found value has wrong type, expects a String value, got Integer"},
    {"Optional[\"x\"]", "1", "ERR Optional['x']: Found value has wrong type, expects a value of type Undef or String, got Integer"},
    {"Type[1]", "1", "PARSE ERROR: The expression <Type[1]> is not a valid type specification."},
    {"Sensitive[String[1]]", "1", "ERR Sensitive[String]: Found value has wrong type, expects a Sensitive[String] value, got Integer"},
    {"Callable[String, 1, 2, Callable]", "1", "ERR Callable[String, 1, 2, Callable]: Found value has wrong type, expects a Callable value, got Integer"},
    {"Runtime[ruby, \"Symbol\"]", "1", "ERR Runtime[ruby, 'Symbol']: Found value has wrong type, expects a Runtime value, got Integer"},
    {"Enum['abcdefghijkl", "1", "PARSE ERROR: Unclosed quote after \"'\" followed by 'abcde...' (line: 1, column: 7)"},
    {"Integer[0x]", "1", "PARSE ERROR: Not a valid hex number 0x (line: 1, column: 9)"},
    {"Integer[1.]", "1", "PARSE ERROR: Syntax error at ']' (line: 1, column: 11)"},
    {"Integer[1.5.3]", "1", "PARSE ERROR: Syntax error at '3' (line: 1, column: 13)"},
    {"Integer[12abc]", "1", "PARSE ERROR: Illegal number '12abc' (line: 1, column: 9)"},
    {"Integer[0xfg]", "1", "PARSE ERROR: Not a valid hex number 0xfg (line: 1, column: 9)"},
    {"Enum[a b]", "1", "PARSE ERROR: Syntax error at 'b' (line: 1, column: 8)"},
    {" Integer[1,", "1", "PARSE ERROR: Syntax error at end of input"},
    {"Enum[$]", "1", "PARSE ERROR: The expression <$> is not a valid type specification."},
    {"Enum[@]", "1", "PARSE ERROR: Syntax error at ']' (line: 1, column: 7)"},
    {"Enum[é]", "1", "PARSE ERROR: Syntax error at '' (line: 1, column: 6)"},
    {"Enum[~]", "1", "PARSE ERROR: Syntax error at '~' (line: 1, column: 6)"},
    {"Integer[1]Integer", "1", "PARSE ERROR: The expression <Integer[1]Integer> is not a valid type specification."},
    {"Integer[1] ]", "1", "PARSE ERROR: Syntax error at ']' (line: 1, column: 12)"},
    {"Integer[default,", "1", "PARSE ERROR: Syntax error at end of input"},
    {"Struct[{1 => String}]", "1", "PARSE ERROR: Illegal Struct member key type. Expected NotUndef, Optional, String, or Enum. Got: Integer"},
    {"Struct[{Integer => String}]", "1", "PARSE ERROR: Illegal Struct member key type. Expected NotUndef, Optional, String, or Enum. Got: Puppet::Pops::Types::PIntegerType"},
    {"Struct[{\"\" => String}]", "1", "PARSE ERROR: Struct element key cannot be an empty String"},
    {"Struct[{NotUndef[a] => Optional[String]}]", "1", "ERR Struct[{NotUndef['a'] => Optional[String]}]: Found value has wrong type, expects a Struct value, got Integer"},
    {"Struct[{a => Optional[String], Optional[b] => Integer, c => Undef}]", "1", "ERR Struct[{'a' => Optional[String], Optional['b'] => Integer, 'c' => Undef}]: Found value has wrong type, expects a Struct value, got Integer"},
    {"Pattern[1]", "1", "PARSE ERROR: Only String, Regexp, Pattern-Type, and Regexp-Type are allowed: got 'Integer"},
    {"Class[foo]", "1", "ERR Class[foo]: Found value has wrong type, expects a Class value, got Integer"},
    {"Timespan", "1", "ERR Timespan: Found value has wrong type, expects a Timespan value, got Integer"},
    {"Integer[\"default\", 5]", "1", "PARSE ERROR: undefined method `>' for false:FalseClass"},
    {"Callable[[String], Integer]", "1", "ERR Callable[[String], Integer]: Found value has wrong type, expects a Callable value, got Integer"},
    {"Iterable[String, 1]", "1", "PARSE ERROR: Invalid number of type parameters specified: Iterable requires 1, 2 provided"},
    {"Variant[Integer, 1]", "1", "PARSE ERROR: The expression <Variant[Integer, 1]> is not a valid type specification."},
    {"NotUndef", "1", "OK NotUndef"},
    {"Struct", "1", "ERR Struct: Found value has wrong type, expects a Struct value, got Integer"},
    {"Tuple", "1", "ERR Tuple: Found value has wrong type, expects a Tuple value, got Integer"},
    {"Optional", "1", "ERR Optional: "},
    {"Integer[1, 2] # comment", "1", "OK Integer[1, 2]"},
    {"Integer[ 1 , 2 ]", "1", "OK Integer[1, 2]"},
    {"Array[Integer[1,2],]", "1", "ERR Array[Integer[1, 2]]: Found value has wrong type, expects an Array value, got Integer"},
    {"Variant[Integer, Integer[1,5], Integer[3, 10], Float]", "\"x\"", "ERR Variant[Integer, Integer[1, 5], Integer[3, 10], Float]: Found value has wrong type, expects a value of type Integer or Float, got String"},
    {"Variant[Enum[a], Enum[b], String]", "1", "ERR Variant[Enum['a'], Enum['b'], String]: Found value has wrong type, expects a value of type String or Enum, got Integer"},
    {"Array[String, 0, 0]", "1", "ERR Array[0, 0]: Found value has wrong type, expects an Array value, got Integer"},
    {"Hash[String, Integer, 0, 0]", "1", "ERR Hash[0, 0]: Found value has wrong type, expects a Hash value, got Integer"},
    {"Tuple[String, Integer, 2]", "1", "ERR Tuple[String, Integer, 2]: Found value has wrong type, expects a Tuple value, got Integer"},
    {"Tuple[String, 2, default]", "1", "ERR Tuple[String, 2]: Found value has wrong type, expects a Tuple value, got Integer"},
    {"Tuple[String, default, 4]", "1", "ERR Tuple[String, 0, 4]: Found value has wrong type, expects a Tuple value, got Integer"},
    {"Enum[b, a, b]", "1", "ERR Enum['a', 'b']: Found value has wrong type, expects a match for Enum['a', 'b'], got Integer"},
    {"Pattern[/a/, /a/]", "1", "ERR Pattern[/a/]: Found value has wrong type, expects a match for Pattern[/a/], got Integer"},
    {"Optional[Optional[String]]", "1", "ERR Optional[Optional[String]]: Found value has wrong type, expects a value of type Undef or String, got Integer"},
    {"NotUndef[Optional[String]]", "1", "ERR NotUndef[Optional[String]]: Found value has wrong type, expects a String value, got Integer"},
    {"Optional[NotUndef[String]]", "1", "ERR Optional[NotUndef[String]]: Found value has wrong type, expects a value of type Undef or String, got Integer"},
    {"Variant[Integer]", "\"x\"", "ERR Integer: Found value has wrong type, expects an Integer value, got String"},
    {"Collection[1, 2]", "1", "ERR Collection[1, 2]: Found value has wrong type, expects a Collection value, got Integer"},
    {"Integer[0x7fffffffffffffff]", "\"x\"", "ERR Integer[9223372036854775807]: Found value has wrong type, expects an Integer value, got String"},
    {"Integer[99999999999999999999999]", "\"x\"", "ERR Integer[99999999999999999999999]: Found value has wrong type, expects an Integer value, got String"},
    {"Integer[-99999999999999999999999, 5]", "\"x\"", "ERR Integer[-99999999999999999999999, 5]: Found value has wrong type, expects an Integer value, got String"},
    {"Float[1e3, 2e10]", "\"x\"", "ERR Float[1000.0, 20000000000.0]: Found value has wrong type, expects a Float value, got String"},
    {"Float[-0.0, 1.0e-5]", "\"x\"", "ERR Float[-0.0, 1.0e-05]: Found value has wrong type, expects a Float value, got String"},
    /* powers of two whose shortest digits are not the correctly rounded ones (Puppet 7.23:
     * TypeFactory.float_range(2.0**-24, 2.0**182).to_s) */
    {"Float[5.9604644775390625e-08, 6.1299821634635554e54]", "\"x\"", "ERR Float[5.960464477539063e-08, 6.129982163463556e+54]: Found value has wrong type, expects a Float value, got String"},
    {"Enum[\"a\\u{41}\\u0042\\s\\$\"]", "1", "ERR Enum['aAB $']: Found value has wrong type, expects a match for Enum['aAB $'], got Integer"},
    {"Enum['it\\'s', 'back\\\\slash', 'keep\\n']", "1", "ERR Enum['back\\slash', 'it\\'s', 'keep\\n']: Found value has wrong type, expects a match for Enum['back\\slash', 'it\\'s', 'keep\\n'], got Integer"},
    {"Enum[true, a]", "1", "PARSE ERROR: Enum parameters must be identifiers or strings"},
    {"Integer[1,2] ;", "1", "PARSE ERROR: Syntax error at end of input"},
    {"Integer[1]; String", "1", "PARSE ERROR: The expression <Integer[1]; String> is not a valid type specification."},
    {"(Integer)", "1", "PARSE ERROR: The expression <(Integer> is not a valid type specification."},
    {"Integer[-default]", "1", "PARSE ERROR: undefined method `-@' for :default:Symbol"},
    {"Hash[{a => 1}]", "1", "PARSE ERROR: Invalid number of type parameters specified: Hash requires 2 to 4, 1 provided"},
    {"Array[[String]]", "1", "PARSE ERROR: The expression <Array[[String]]> is not a valid type specification."},
    {"Struct[{a => Integer, a => String}]", "1", "ERR Struct[{'a' => String}]: Found value has wrong type, expects a Struct value, got Integer"},
    {"Struct[{Optional[a] => Optional[Integer]}]", "1", "ERR Struct[{'a' => Optional[Integer]}]: Found value has wrong type, expects a Struct value, got Integer"},
    {"Struct[{NotUndef[a] => Integer}]", "1", "ERR Struct[{'a' => Integer}]: Found value has wrong type, expects a Struct value, got Integer"},
    {"Runtime[ruby]", "1", "PARSE ERROR: Invalid number of type parameters specified: Runtime requires 2, 1 provided"},
    {"Boolean[false]", "true", "ERR Boolean[false]: Found value has wrong type, expects a Boolean[false] value, got Boolean[true]"},
    {"Type[Integer]", "1", "ERR Type[Integer]: Found value has wrong type, expects a Type[Integer] value, got Integer"},
    {"Iterator[String]", "1", "ERR Iterator[String]: Found value has wrong type, expects an Iterator[String] value, got Integer"},
    {"Variant[Integer[1,2], Integer[3,4], Integer[6,7]]", "\"x\"", "ERR Variant[Integer[1, 2], Integer[3, 4], Integer[6, 7]]: Found value has wrong type, expects an Integer value, got String"},
    {"Variant[Integer[1,2], Float[1.0, 2.0], Integer[2,4]]", "\"x\"", "ERR Variant[Integer[1, 2], Float[1.0, 2.0], Integer[2, 4]]: Found value has wrong type, expects a value of type Integer or Float, got String"},
    {"SemVer", "1", "ERR SemVer: Found value has wrong type, expects a SemVer value, got Integer"},
    {"URI", "1", "ERR URI: Found value has wrong type, expects an URI value, got Integer"},
    {"Binary", "1", "ERR Binary: Found value has wrong type, expects a Binary value, got Integer"},
    {"Object", "1", "ERR Object[{}]: Found value has wrong type, expects an Object value, got Integer"},
    {"SemVerRange", "1", "ERR SemVerRange: Found value has wrong type, expects a SemVerRange value, got Integer"},
    {"TypeSet", "1", "ERR TypeSet[{pcore_uri => 'http://puppet.com/2016.1/pcore', pcore_version => '1.0.0', name_authority => 'http://puppet.com/2016.1/runtime', name => 'DefaultTypeSet', version => '0.0.0'}]: Found value has wrong type, expects a DefaultTypeSet value, got Integer"},
    {"Init", "1", "OK Init"},
    {"CatalogEntry", "1", "ERR CatalogEntry: Found value has wrong type, expects a CatalogEntry value, got Integer"},
    {"Class", "1", "ERR Class: Found value has wrong type, expects a Class value, got Integer"},
    {"Resource", "1", "ERR Resource: Found value has wrong type, expects a Resource value, got Integer"},
    {"TypeReference", "1", "ERR TypeReference['UnresolvedReference']: Found value has wrong type, references an unresolved type 'UnresolvedReference'"},
    {"TypeAlias", "1", "ERR UnresolvedAlias = TypeReference['UnresolvedReference']: Found value has wrong type, references an unresolved type 'UnresolvedReference'"},
    {"Variant[Array[Integer, 2], Array[String, 3]]", "[1]", "ERR Variant[Array[Integer, 2], Array[String, 3]]: Found value has wrong type, expects size to be at least 2, got 1"},
    {"Variant[Array[Integer, 2], Array[String, 3]]", "[\"a\", \"b\"]", "ERR Variant[Array[Integer, 2], Array[String, 3]]:  Found value has wrong type, variant 0 index 0 expects an Integer value, got String\n  Found value has wrong type, variant 0 index 1 expects an Integer value, got String\n  Found value has wrong type, variant 1 expects size to be at least 3, got 2"},
    {"Variant[Array[Integer, 2, 2], Array[Integer, 4]]", "[1, 2, 3]", "ERR Variant[Array[Integer, 2, 2], Array[Integer, 4]]: Found value has wrong type, expects size to be at least 2, got 3"},
    {"Variant[Hash[String, Integer, 2], Hash[String, String, 3]]", "{\"a\": 1}", "ERR Variant[Hash[String, Integer, 2], Hash[String, String, 3]]: Found value has wrong type, expects size to be at least 2, got 1"},
    {"Variant[Struct[{a => Integer}], Struct[{a => String}]]", "{\"a\": 1.5}", "ERR Variant[Struct[{'a' => Integer}], Struct[{'a' => String}]]: Found value has wrong type, entry 'a' expects a value of type Integer or String, got Float"},
    {"Variant[Struct[{a => Integer}], Hash[String, String]]", "{\"a\": 1.5}", "ERR Variant[Struct[{'a' => Integer}], Hash[String, String]]: Found value has wrong type, entry 'a' expects a value of type Integer or String, got Float"},
    {"Variant[Tuple[Integer], Tuple[String]]", "[1.5]", "ERR Variant[Tuple[Integer], Tuple[String]]: Found value has wrong type, index 0 expects a value of type Integer or String, got Float"},
    {"Variant[Tuple[Integer], Tuple[String, String]]", "[1.5]", "ERR Variant[Tuple[Integer], Tuple[String, String]]:  Found value has wrong type, variant 0 index 0 expects an Integer value, got Float\n  Found value has wrong type, variant 1 expects size to be 2, got 1"},
    {"Array[Variant[Integer, Enum[a, b]]]", "[1, \"c\"]", "ERR Array[Variant[Integer, Enum['a', 'b']]]: Found value has wrong type, index 1 expects a value of type Integer or Enum['a', 'b'], got String"},
    {"Hash[String, Variant[Integer, Array[Integer]]]", "{\"x\": [\"a\"]}", "ERR Hash[String, Variant[Integer, Array[Integer]]]:  Found value has wrong type, entry 'x' variant 0 expects an Integer value, got Tuple\n  Found value has wrong type, entry 'x' variant 1 index 0 expects an Integer value, got String"},
    {"Optional[Struct[{a => Integer}]]", "{\"a\": \"x\"}", "ERR Optional[Struct[{'a' => Integer}]]: Found value has wrong type, entry 'a' expects an Integer value, got String"},
    {"Optional[Variant[Integer, String]]", "1.5", "ERR Optional[Variant[Integer, String]]: Found value has wrong type, expects a value of type Undef, Integer, or String, got Float"},
    {"Optional[Array[Integer]]", "[\"a\"]", "ERR Optional[Array[Integer]]: Found value has wrong type, index 0 expects an Integer value, got String"},
    {"Struct[{a => Struct[{b => Integer}]}]", "{\"a\": {\"b\": \"x\"}}", "ERR Struct[{'a' => Struct[{'b' => Integer}]}]: Found value has wrong type, entry 'a' entry 'b' expects an Integer value, got String"},
    {"Struct[{a => Struct[{b => Integer}]}]", "{\"a\": {\"c\": 1}}", "ERR Struct[{'a' => Struct[{'b' => Integer}]}]:  Found value has wrong type, entry 'a' expects a value for key 'b'\n  Found value has wrong type, entry 'a' unrecognized key 'c'"},
    {"Struct[{a => Array[Integer]}]", "{\"a\": [1, \"x\", 2, \"y\"]}", "ERR Struct[{'a' => Array[Integer]}]:  Found value has wrong type, entry 'a' index 1 expects an Integer value, got String\n  Found value has wrong type, entry 'a' index 3 expects an Integer value, got String"},
    {"Tuple[Integer, String, 1, default]", "[1, 2, 3]", "ERR Tuple[Integer, String, 1]:  Found value has wrong type, index 1 expects a String value, got Integer\n  Found value has wrong type, index 1 expects a String value, got Integer"},
    {"Tuple[Integer, String, 1, default]", "[]", "ERR Tuple[Integer, String, 1]: Found value has wrong type, expects size to be at least 1, got 0"},
    {"Tuple[Integer]", "[]", "ERR Tuple[Integer]: Found value has wrong type, expects size to be 1, got 0"},
    {"Hash[String, Integer]", "{\"a\": 1, \"2\": \"b\"}", "ERR Hash[String, Integer]: Found value has wrong type, entry '2' expects an Integer value, got String"},
    {"Hash[Integer, String]", "{\"a\": \"b\"}", "ERR Hash[Integer, String]: Found value has wrong type, key of entry 'a' expects an Integer value, got String"},
    {"Hash[String, String]", "{\"\": \"x\"}", "OK Hash[String, String]"},
    {"Hash[String, String]", "{\"\": 1, \"a\": 2}", "ERR Hash[String, String]: Found value has wrong type, expects a Hash[String, String] value, got Hash[Enum['', 'a'], Integer[1, 2]]"},
    {"Array[String, 2]", "[1]", "ERR Array[String, 2]: Found value has wrong type, expects size to be at least 2, got 1"},
    {"Array[Integer, 2]", "[1]", "ERR Array[Integer, 2]: Found value has wrong type, expects size to be at least 2, got 1"},
    {"Collection[2]", "[1]", "ERR Collection[2]: "},
    {"Array[Struct[{a => Integer}], 1]", "[]", "ERR Array[Struct[{'a' => Integer}], 1]: Found value has wrong type, expects size to be at least 1, got 0"},
    {"Hash[String[2], Integer]", "{\"a\": 1}", "ERR Hash[String[2], Integer]: Found value has wrong type, key of entry 'a' expects a String[2] value, got String"},
    {"Variant[Integer[1,3], Integer[5,7]]", "4", "ERR Variant[Integer[1, 3], Integer[5, 7]]: Found value has wrong type, expects a value of type Integer[1, 3] or Integer[5, 7], got Integer[4, 4]"},
    {"Variant[Integer[1,3], Float]", "4", "ERR Variant[Integer[1, 3], Float]: Found value has wrong type, expects a value of type Integer[1, 3] or Float, got Integer[4, 4]"},
    {"Variant[String[3], String[5, 6]]", "\"ab\"", "ERR Variant[String[3], String[5, 6]]: Found value has wrong type, expects a value of type String[3] or String[5, 6], got String"},
    {"Variant[Enum[a], Pattern[/x/]]", "\"b\"", "ERR Variant[Enum['a'], Pattern[/x/]]: Found value has wrong type, expects a match for Variant[Enum['a'], Pattern[/x/]], got 'b'"},
    {"Variant[Enum[a], String[5]]", "\"b\"", "ERR Variant[Enum['a'], String[5]]: Found value has wrong type, expects a match for Variant[Enum['a'], String[5]], got 'b'"},
    {"Variant[Boolean[true], Integer]", "false", "ERR Variant[Boolean[true], Integer]: Found value has wrong type, expects a value of type Boolean[true] or Integer, got Boolean[false]"},
    {"NotUndef[Variant[Integer, String]]", "null", "ERR NotUndef[Variant[Integer, String]]: Found value has wrong type, expects a value of type Integer or String, got Undef"},
    {"NotUndef[Integer]", "null", "ERR NotUndef[Integer]: Found value has wrong type, expects an Integer value, got Undef"},
    {"Optional[Integer]", "\"x\"", "ERR Optional[Integer]: Found value has wrong type, expects a value of type Undef or Integer, got String"},
    {"Array[NotUndef]", "[null]", "ERR Array[NotUndef]: Found value has wrong type, index 0 expects a NotUndef value, got Undef"},
    {"Array[Optional[Integer]]", "[\"x\"]", "ERR Array[Optional[Integer]]: Found value has wrong type, index 0 expects a value of type Undef or Integer, got String"},
    {"Variant[Undef, Enum[a, b]]", "\"c\"", "ERR Variant[Undef, Enum['a', 'b']]: Found value has wrong type, expects an undef value or a match for Enum['a', 'b'], got 'c'"},
    {"Variant[Undef, Pattern[/a/]]", "\"c\"", "ERR Variant[Undef, Pattern[/a/]]: Found value has wrong type, expects an undef value or a match for Pattern[/a/], got 'c'"},
    {"Variant[Undef, Integer, Enum[a]]", "\"c\"", "ERR Variant[Undef, Integer, Enum['a']]: Found value has wrong type, expects a value of type Undef, Integer, or Enum['a'], got String"},
    {"Enum[a, b]", "[\"a\"]", "ERR Enum['a', 'b']: Found value has wrong type, expects a match for Enum['a', 'b'], got Tuple"},
    {"Pattern[/a/]", "{\"a\": 1}", "ERR Pattern[/a/]: Found value has wrong type, expects a match for Pattern[/a/], got Struct"},
    {"Struct[{a => Enum[x, y]}]", "{\"a\": \"z\"}", "ERR Struct[{'a' => Enum['x', 'y']}]: Found value has wrong type, entry 'a' expects a match for Enum['x', 'y'], got 'z'"},
    {"Iterable[String]", "5", "ERR Iterable[String]: Found value has wrong type, expects an Iterable[String] value, got Integer"},
    {"Iterable[Integer]", "\"abc\"", "ERR Iterable[Integer]: Found value has wrong type, expects an Iterable[Integer] value, got String"},
    {"Iterable[Integer]", "[1, \"x\"]", "ERR Iterable[Integer]: Found value has wrong type, expects an Iterable[Integer] value, got Tuple"},
    {"Iterable[String]", "{\"a\": \"b\"}", "ERR Iterable[String]: Found value has wrong type, expects an Iterable[String] value, got Struct"},
    {"Sensitive[String]", "\"x\"", "ERR Sensitive[String]: Found value has wrong type, expects a Sensitive[String] value, got String"},
    {"Sensitive[Integer[1,2]]", "{\"__sensitive__\": 5}", "OK Sensitive[Integer]"},
    {"Variant[Sensitive[String], Integer]", "{\"__sensitive__\": 5}", "ERR Variant[Sensitive[String], Integer]: Found value has wrong type, expects a value of type Sensitive[String] or Integer, got Sensitive[Integer]"},
    {"Array[Sensitive]", "[{\"__sensitive__\": 5}, 3]", "ERR Array[Sensitive]: Found value has wrong type, index 1 expects a Sensitive value, got Integer"},
    {"String", "{\"__sensitive__\": {\"__sensitive__\": 1}}", "ERR String: Found value has wrong type, expects a String value, got Sensitive[Sensitive]"},
    {"Integer", "{\"__sensitive__\": [1, 2.5]}", "ERR Integer: Found value has wrong type, expects an Integer value, got Sensitive[Array]"},
    {"Integer", "{\"__sensitive__\": [\"a\", \"b\"]}", "ERR Integer: Found value has wrong type, expects an Integer value, got Sensitive[Array]"},
    {"Integer", "{\"__sensitive__\": {\"a\": 1, \"b\": \"x\"}}", "ERR Integer: Found value has wrong type, expects an Integer value, got Sensitive[Hash]"},
    {"Integer", "{\"__sensitive__\": {\"1\": 1}}", "ERR Integer: Found value has wrong type, expects an Integer value, got Sensitive[Hash]"},
    {"Integer", "{\"__sensitive__\": [[1], [2]]}", "ERR Integer: Found value has wrong type, expects an Integer value, got Sensitive[Array]"},
    {"Integer", "{\"__sensitive__\": [1, null]}", "ERR Integer: Found value has wrong type, expects an Integer value, got Sensitive[Array]"},
    {"Integer", "{\"__sensitive__\": [{\"a\": 1}, 1]}", "ERR Integer: Found value has wrong type, expects an Integer value, got Sensitive[Array]"},
    {"Integer", "{\"__sensitive__\": [true, 1]}", "ERR Integer: Found value has wrong type, expects an Integer value, got Sensitive[Array]"},
    {"Sensitive[String]", "{\"__sensitive__\": [1, [2]]}", "ERR Sensitive[String]: Found value has wrong type, expects a Sensitive[String] value, got Sensitive[Array[Data]]"},
    {"Sensitive[String]", "{\"__sensitive__\": [{\"__sym__\": \"x\"}, 1]}", "ERR Sensitive[String]: Found value has wrong type, expects a Sensitive[String] value, got Sensitive[Array]"},
    {"Integer", "{\"__sym__\": \"default\"}", "ERR Integer: Found value has wrong type, expects an Integer value, got Default"},
    {"Default", "{\"__sym__\": \"default\"}", "OK Default"},
    {"Undef", "{\"__sym__\": \"undef\"}", "OK Undef"},
    {"Scalar", "{\"__sym__\": \"x\"}", "ERR Scalar: Found value has wrong type, expects a Scalar value, got Runtime"},
    {"NotUndef", "{\"__sym__\": \"x\"}", "OK NotUndef"},
    {"Array[Integer]", "[{\"__sym__\": \"x\"}]", "ERR Array[Integer]: Found value has wrong type, index 0 expects an Integer value, got Runtime"},
    {"Hash[String, Integer]", "{\"a\": {\"__sym__\": \"x\"}}", "ERR Hash[String, Integer]: Found value has wrong type, entry 'a' expects an Integer value, got Runtime"},
    {"Integer", "[1.5, \"a\", null, true, {\"x\": [1]}]", "ERR Integer: Found value has wrong type, expects an Integer value, got Tuple"},
    {"String", "{\"a\": null}", "ERR String: Found value has wrong type, expects a String value, got Struct"},
    {"Runtime['ruby', 'Symbol']", "{\"__sym__\": \"x\"}", "OK Runtime[ruby, 'Symbol']"},
    {"Runtime['ruby', 'String']", "{\"__sym__\": \"x\"}", "ERR Runtime[ruby, 'String']: Found value has wrong type, expects a Runtime[ruby, 'String'] value, got Runtime[ruby, 'Symbol']"},
    {"Variant[Integer, Runtime]", "\"x\"", "ERR Variant[Integer, Runtime]: Found value has wrong type, expects a value of type Integer or Runtime, got String"},
    {"Init", "1", "OK Init"},
    {"Init", "{\"__sym__\": \"x\"}", "ERR Init: Found value has wrong type, expects an Init value, got Runtime"},
    {"Integer", "{\"__big__\": \"-9223372036854775809\"}", "OK Integer"},
    {"Integer[0]", "{\"__big__\": \"-9223372036854775809\"}", "ERR Integer[0]: Found value has wrong type, expects an Integer[0] value, got Integer[-9223372036854775809, -9223372036854775809]"},
    {"Float[0.0]", "-1.5", "ERR Float[0.0]: Found value has wrong type, expects a Float[0.0] value, got Float[-1.5, -1.5]"},
    {"Float[0.0]", "1e300", "OK Float[0.0]"},
    {"Numeric", "\"x\"", "ERR Numeric: Found value has wrong type, expects a Numeric value, got String"},
    {"Variant[Numeric, String]", "[]", "ERR Variant[Numeric, String]: Found value has wrong type, expects a value of type Numeric or String, got Array"},
    {"Array[Integer]", "[[], {}]", "ERR Array[Integer]:  Found value has wrong type, index 0 expects an Integer value, got Array\n  Found value has wrong type, index 1 expects an Integer value, got Hash"},
    {"Struct[{a => Integer}]", "{\"a\": 1, \"b\": 2, \"c\": 3}", "ERR Struct[{'a' => Integer}]:  Found value has wrong type, unrecognized key 'b'\n  Found value has wrong type, unrecognized key 'c'"},
    {"Struct[{a => Integer, b => Integer}]", "{}", "ERR Struct[{'a' => Integer, 'b' => Integer}]: Found value has wrong type, expects size to be 2, got 0"},
    {"Tuple[Integer, Integer]", "{\"a\": 1}", "ERR Tuple[Integer, Integer]: Found value has wrong type, expects a Tuple value, got Struct"},
    {"Variant[Tuple[Integer, Integer], Array[String]]", "[1]", "ERR Variant[Tuple[Integer, Integer], Array[String]]:  Found value has wrong type, variant 0 expects size to be 2, got 1\n  Found value has wrong type, variant 1 index 0 expects a String value, got Integer"},
    {"Sensitive[Integer]", "{\"__sensitive__\": [{\"__sensitive__\": 1}, 1]}", "ERR Sensitive[Integer]: Found value has wrong type, expects a Sensitive[Integer] value, got Sensitive[Array[RichData]]"},
    {"Sensitive[Integer]", "{\"__sensitive__\": [[1], 1]}", "ERR Sensitive[Integer]: Found value has wrong type, expects a Sensitive[Integer] value, got Sensitive[Array[Data]]"},
    {"Sensitive[Integer]", "{\"__sensitive__\": [{\"a\": 1}, [1]]}", "ERR Sensitive[Integer]: Found value has wrong type, expects a Sensitive[Integer] value, got Sensitive[Array[Data]]"},
    {"Sensitive[Integer]", "{\"__sensitive__\": [{\"__sym__\": \"x\"}, 1]}", "ERR Sensitive[Integer]: Found value has wrong type, expects a Sensitive[Integer] value, got Sensitive[Array]"},
    {"Sensitive[Integer]", "{\"__sensitive__\": [{\"__sym__\": \"x\"}, {\"__sym__\": \"y\"}]}", "ERR Sensitive[Integer]: Found value has wrong type, expects a Sensitive[Integer] value, got Sensitive[Array[Runtime[ruby, 'Symbol']]]"},
    {"Sensitive[Integer]", "{\"__sensitive__\": [null, 1]}", "ERR Sensitive[Integer]: Found value has wrong type, expects a Sensitive[Integer] value, got Sensitive[Array[Integer]]"},
    {"Sensitive[Integer]", "{\"__sensitive__\": [1.5, 1]}", "ERR Sensitive[Integer]: Found value has wrong type, expects a Sensitive[Integer] value, got Sensitive[Array[Numeric]]"},
    {"Sensitive[Integer]", "{\"__sensitive__\": [\"a\", \"b\"]}", "ERR Sensitive[Integer]: Found value has wrong type, expects a Sensitive[Integer] value, got Sensitive[Array[String[1, 1]]]"},
    {"Sensitive[Integer]", "{\"__sensitive__\": [\"a\", 1]}", "ERR Sensitive[Integer]: Found value has wrong type, expects a Sensitive[Integer] value, got Sensitive[Array[ScalarData]]"},
    {"Sensitive[Integer]", "{\"__sensitive__\": {\"a\": \"b\", \"c\": 1}}", "ERR Sensitive[Integer]: Found value has wrong type, expects a Sensitive[Integer] value, got Sensitive[Hash[String[1, 1], ScalarData]]"},
    {"Sensitive[Integer]", "{\"__sensitive__\": [true, false]}", "ERR Sensitive[Integer]: Found value has wrong type, expects a Sensitive[Integer] value, got Sensitive[Array[ScalarData]]"},
    {"Sensitive[Integer]", "{\"__sensitive__\": [[1, 2], [\"a\"]]}", "ERR Sensitive[Integer]: Found value has wrong type, expects a Sensitive[Integer] value, got Sensitive[Array[Array[ScalarData]]]"},
    {"Sensitive[Integer]", "{\"__sensitive__\": [{\"a\": 1}, {\"b\": \"x\"}]}", "ERR Sensitive[Integer]: Found value has wrong type, expects a Sensitive[Integer] value, got Sensitive[Array[Hash[String[1, 1], ScalarData]]]"},
    {"Array[Integer]", "{\"__sensitive__\": [1]}", "ERR Array[Integer]: Found value has wrong type, expects an Array value, got Sensitive[Array]"},
    {"RichData", "12", "OK RichData"},
    {"NotUndef[Optional[Array[Enum[a, b], 0, 3]]]", "1", "ERR NotUndef[Optional[Array[Enum['a', 'b'], 0, 3]]]: Found value has wrong type, expects an Array value, got Integer"},
    {"Tuple[Iterable[Variant[Integer]], Pattern[/^a/], ScalarData, 1]", "{\"__sensitive__\": \"b\"}", "ERR Tuple[Iterable[Integer], Pattern[/^a/], ScalarData, 1]: Found value has wrong type, expects a Tuple value, got Sensitive[String]"},
    {"NotUndef[Variant[NotUndef[Undef]]]", "{}", "ERR NotUndef[NotUndef[Undef]]: Found value has wrong type, expects a NotUndef[Undef] value, got Hash"},
    {"Default", "[{\"__sensitive__\": {\"c\": \"ab\"}}, {\"e\": {\"\": null}, \"d\": {\"a\": false, \"\": {\"__sensitive__\": \"s\"}}, \"a\": {\"__sensitive__\": null}}]", "ERR Default: Found value has wrong type, expects a Default value, got Tuple"},
    {"Default", "-3", "ERR Default: Found value has wrong type, expects a Default value, got Integer"},
    {"Collection[1,2]", "{\"b\": [{\"__sensitive__\": \"b\"}]}", "OK Collection[1, 2]"},
    {"Variant[Boolean, Iterable[Array[ScalarData]], Sensitive[Sensitive[RichData]]]", "{}", "OK Variant[Boolean, Iterable[Array[ScalarData]], Sensitive[Sensitive[RichData]]]"},
    {"Variant[Sensitive[Variant[Scalar, Integer]], Iterable[Variant[Collection[1,2], Integer]], Hash[Collection, Integer[5], 2]]", "{}", "OK Variant[Sensitive[Variant[Scalar, Integer]], Iterable[Variant[Collection[1, 2], Integer]], Hash[Collection, Integer[5], 2]]"},
    {"Hash[Integer, Tuple[Collection[1,2], 1], 1]", "0.5", "ERR Hash[Integer, Tuple[Collection[1, 2], 1], 1]: Found value has wrong type, expects a Hash value, got Float"},
    {"Enum[a, B, true]", "{\"__sensitive__\": \"ab\"}", "PARSE ERROR: Enum parameters must be identifiers or strings"},
    {"Variant[Array[Any], Struct[{a => Default, 'e' => Iterable[Numeric]}]]", "[1.5]", "OK Variant[Array, Struct[{'a' => Default, 'e' => Iterable[Numeric]}]]"},
    {"String", "{\"__sensitive__\": \"s\"}", "ERR String: Found value has wrong type, expects a String value, got Sensitive[String]"},
    {"Sensitive[Hash[Sensitive[Data], NotUndef, 0]]", "\"abc\"", "ERR Sensitive[Hash[Sensitive[Data], NotUndef]]: Found value has wrong type, expects a Sensitive[Hash] value, got String"},
    {"Optional[Undef]", "\"a\"", "ERR Optional[Undef]: Found value has wrong type, expects an Undef value, got String"},
    {"Tuple[Tuple[Optional[Collection], Integer], 1]", "{\"__sensitive__\": {\"__sensitive__\": \"s\"}}", "ERR Tuple[Tuple[Optional[Collection], Integer], 1]: Found value has wrong type, expects a Tuple value, got Sensitive[Sensitive]"},
    {"String[1]", "\"a\"", "OK String[1]"},
    {"Optional[NotUndef[Sensitive]]", "{\"__sensitive__\": \"s\"}", "OK Optional[NotUndef[Sensitive]]"},
    {"Variant[Tuple[Any, 1], String[1], Float]", "{\"__sensitive__\": {\"__sensitive__\": 5}}", "ERR Variant[Tuple[Any, 1], String[1], Float]: Found value has wrong type, expects a value of type Tuple, String, or Float, got Sensitive[Sensitive]"},
    {"Sensitive[Default]", "1.5", "ERR Sensitive[Default]: Found value has wrong type, expects a Sensitive[Default] value, got Float"},
    {"Pattern[/^a/]", "\"abc\"", "OK Pattern[/^a/]"},
    {"Tuple[Float, Collection[1,2], 2, default]", "{\"__sensitive__\": 5}", "ERR Tuple[Float, Collection[1, 2], 2]: Found value has wrong type, expects a Tuple value, got Sensitive[Integer]"},
    {"Variant[Optional[Hash[Integer, Any]]]", "null", "OK Optional[Hash[Integer, Any]]"},
    {"Pattern[/^a/]", "7", "ERR Pattern[/^a/]: Found value has wrong type, expects a match for Pattern[/^a/], got Integer"},
    {"Variant[Array[Tuple[Integer[0,10], 0, 3], 0, 4], Array[Array[String[1]], 0, 4]]", "12", "ERR Variant[Array[Tuple[Integer[0, 10], 0, 3], 0, 4], Array[Array[String[1]], 0, 4]]: Found value has wrong type, expects an Array value, got Integer"},
    {"Hash[Default, Optional[Optional[Pattern[/^a/]]], 1]", "{\"__sensitive__\": 12}", "ERR Hash[Default, Optional[Optional[Pattern[/^a/]]], 1]: Found value has wrong type, expects a Hash value, got Sensitive[Integer]"},
    {"Any", "1", "OK Any"},
    {"Tuple[NotUndef[ScalarData], Any, NotUndef[String[1]], 2, default]", "{\"e\": \"a\"}", "ERR Tuple[NotUndef[ScalarData], Any, NotUndef[String[1]], 2]: Found value has wrong type, expects a Tuple value, got Struct"},
    {"Integer[5]", "[\"abc\", {\"a\": \"abc\", \"e\": {\"c\": 12}}, {\"__sensitive__\": [\"b\"]}]", "ERR Integer[5]: Found value has wrong type, expects an Integer value, got Tuple"},
    {"String[2,3]", "\"\"", "ERR String[2, 3]: Found value has wrong type, expects a String[2, 3] value, got String"},
    {"Array[Array[Tuple[Enum[a, b], Enum[a, b], 1]], 0, 4]", "{}", "ERR Array[Array[Tuple[Enum['a', 'b'], Enum['a', 'b'], 1]], 0, 4]: Found value has wrong type, expects an Array value, got Hash"},
    {"Hash[RichData, Float[0.0, 1.5], 1]", "{\"__sensitive__\": \"s\"}", "ERR Hash[RichData, Float[0.0, 1.5], 1]: Found value has wrong type, expects a Hash value, got Sensitive[String]"},
    {"Iterable[String[1]]", "-3", "ERR Iterable[String[1]]: Found value has wrong type, expects an Iterable[String[1]] value, got Integer"},
    {"Iterable[Sensitive[Struct[{Optional[c] => Numeric}]]]", "[7]", "ERR Iterable[Sensitive[Struct[{Optional['c'] => Numeric}]]]: Found value has wrong type, expects an Iterable[Sensitive[Struct[{Optional['c'] => Numeric}]]] value, got Tuple"},
    {"NotUndef[Sensitive[Data]]", "{}", "ERR NotUndef[Sensitive[Data]]: Found value has wrong type, expects a Sensitive[Data] value, got Hash"},
    {"Any", "{\"__sym__\": \"x\"}", "OK Any"},
    {"NotUndef", "{\"__sensitive__\": \"A\"}", "OK NotUndef"},
    {"Iterable[Boolean]", "{\"e\": false, \"b\": 0.5}", "ERR Iterable[Boolean]: Found value has wrong type, expects an Iterable[Boolean] value, got Struct"},
    {"Hash[Struct[{NotUndef[d] => Struct[{NotUndef[d] => Any, 'e' => Collection[1,2], Optional[c] => NotUndef}], b => Integer[5]}], Hash[Hash[Scalar, RichData], Struct[{Optional[c] => Iterable, Optional[c] => Pattern[/^a/]}], 1], 0]", "{\"__sensitive__\": 7}", "ERR Hash[Struct[{'d' => Struct[{NotUndef['d'] => Any, 'e' => Collection[1, 2], Optional['c'] => NotUndef}], 'b' => Integer[5]}], Hash[Hash[Scalar, RichData], Struct[{Optional['c'] => Pattern[/^a/]}], 1], 0]: Found value has wrong type, expects a Hash value, got Sensitive[Integer]"},
    {"Iterable[Iterable[Float[0.0, 1.5]]]", "\"a\"", "ERR Iterable[Iterable[Float[0.0, 1.5]]]: Found value has wrong type, expects an Iterable[Iterable[Float[0.0, 1.5]]] value, got String"},
    {"Array[Optional[Variant[Enum[a, B, true], String]]]", "[]", "PARSE ERROR: Enum parameters must be identifiers or strings"},
    {"Hash[Default, Hash[Scalar, Hash[Sensitive, Iterable, 0]], 1]", "[{\"b\": {\"__sensitive__\": 5}, \"d\": {\"__sensitive__\": \"ab\"}}, null, [{\"__sensitive__\": 1}]]", "ERR Hash[Default, Hash[Scalar, Hash[Sensitive, Iterable, 0]], 1]: Found value has wrong type, expects a Hash value, got Tuple"},
    {"Collection[1,2]", "\"\"", "ERR Collection[1, 2]: Found value has wrong type, expects a Collection value, got String"},
    {"Undef", "\"a\"", "ERR Undef: Found value has wrong type, expects an Undef value, got String"},
    {"Collection", "{\"__sensitive__\": 0.5}", "ERR Collection: Found value has wrong type, expects a Collection value, got Sensitive[Float]"},
    {"NotUndef[Array[Iterable[ScalarData], 0, 3]]", "[]", "OK NotUndef[Array[Iterable[ScalarData], 0, 3]]"},
    {"Array[Hash[Hash[Float[0.0, 1.5], Integer[5], 2], Undef, 1]]", "{\"a\": false, \"c\": null}", "ERR Array[Hash[Hash[Float[0.0, 1.5], Integer[5], 2], Undef, 1]]: Found value has wrong type, expects an Array value, got Struct"},
    {"Default", "{}", "ERR Default: Found value has wrong type, expects a Default value, got Hash"},
    {"Optional[Pattern[/^a/]]", "\"\"", "ERR Optional[Pattern[/^a/]]: Found value has wrong type, expects an undef value or a match for Pattern[/^a/], got ''"},
    {"Sensitive[Data]", "{\"__sensitive__\": \"ab\"}", "OK Sensitive[Data]"},
    {"NotUndef[Sensitive[Enum[a, B, true]]]", "null", "PARSE ERROR: Enum parameters must be identifiers or strings"},
    {"Optional[Collection[1,2]]", "{\"__sensitive__\": {\"__sensitive__\": \"b\"}}", "ERR Optional[Collection[1, 2]]: Found value has wrong type, expects a value of type Undef or Collection, got Sensitive[Sensitive]"},
    {"Hash[Integer, Hash[RichData, Tuple[RichData], 2], 0]", "\"\"", "ERR Hash[Integer, Hash[RichData, Tuple[RichData], 2], 0]: Found value has wrong type, expects a Hash value, got String"},
    {"Optional[Sensitive[Data]]", "{\"d\": {}}", "ERR Optional[Sensitive[Data]]: Found value has wrong type, expects a value of type Undef or Sensitive[Data], got Struct"},
    {"Optional[Integer[5]]", "[[]]", "ERR Optional[Integer[5]]: Found value has wrong type, expects a value of type Undef or Integer, got Tuple"},
    {"Tuple[Enum[a, B, true], Any, Integer[5], 0, 3]", "{\"__sensitive__\": 5}", "PARSE ERROR: Enum parameters must be identifiers or strings"},
    {"Hash[Enum[a, b], Sensitive[Collection[1,2]]]", "{\"b\": \"\", \"e\": \"b\", \"c\": {\"__sensitive__\": 1}}", "ERR Hash[Enum['a', 'b'], Sensitive[Collection]]:  Found value has wrong type, entry 'b' expects a Sensitive[Collection] value, got String\n  Found value has wrong type, key of entry 'e' expects a match for Enum['a', 'b'], got 'e'\n  Found value has wrong type, entry 'e' expects a Sensitive[Collection] value, got String\n  Found value has wrong type, key of entry 'c' expects a match for Enum['a', 'b'], got 'c'\n  Found value has wrong type, entry 'c' expects a Sensitive[Collection] value, got Sensitive[Integer]"},
    {"Iterable[Optional[Struct[{b => Integer[5], b => Collection}]]]", "1.5", "ERR Iterable[Optional[Struct[{'b' => Collection}]]]: Found value has wrong type, expects an Iterable[Optional] value, got Float"},
    {"Tuple[Hash[Integer, NotUndef[Scalar]], ScalarData, 1]", "\"a\"", "ERR Tuple[Hash[Integer, NotUndef[Scalar]], ScalarData, 1]: Found value has wrong type, expects a Tuple value, got String"},
    {"Tuple[ScalarData, 0, 3]", "12", "ERR Tuple[ScalarData, 0, 3]: Found value has wrong type, expects a Tuple value, got Integer"},
    {"Array[Collection[1,2]]", "\"a\"", "ERR Array[Collection[1, 2]]: Found value has wrong type, expects an Array value, got String"},
    {"NotUndef[Iterable[Hash[Boolean, Float, 2]]]", "[{\"__sym__\": \"x\"}]", "ERR NotUndef[Iterable[Hash[Boolean, Float, 2]]]: Found value has wrong type, expects an Iterable[Hash[Boolean, Float, 2]] value, got Tuple"},
    {"Hash[Integer, Undef]", "null", "ERR Hash[Integer, Undef]: Found value has wrong type, expects a Hash value, got Undef"},
    {"Iterable", "{\"__sym__\": \"x\"}", "ERR Iterable: Found value has wrong type, expects an Iterable value, got Runtime"},
    {"Struct[{a => Integer}]", "{\"e\": \"a\", \"d\": 1.5, \"a\": 1.5}", "ERR Struct[{'a' => Integer}]:  Found value has wrong type, entry 'a' expects an Integer value, got Float\n  Found value has wrong type, unrecognized key 'e'\n  Found value has wrong type, unrecognized key 'd'"},
    {"Sensitive[ScalarData]", "7", "ERR Sensitive[ScalarData]: Found value has wrong type, expects a Sensitive[ScalarData] value, got Integer"},
    {"Tuple[Integer[0,10], 1]", "\"\"", "ERR Tuple[Integer[0, 10], 1]: Found value has wrong type, expects a Tuple value, got String"},
    {"Optional[Integer]", "1.5", "ERR Optional[Integer]: Found value has wrong type, expects a value of type Undef or Integer, got Float"},
    {"Hash[Struct[{NotUndef[d] => NotUndef, Optional[c] => Hash[NotUndef, String[2,3], 0], a => Iterable[String]}], Collection[1,2], 2]", "{\"__sensitive__\": {\"e\": {\"__sensitive__\": 5}, \"d\": [7, \"\"], \"b\": []}}", "ERR Hash[Struct[{'d' => NotUndef, Optional['c'] => Hash[NotUndef, String[2, 3], 0], 'a' => Iterable[String]}], Collection[1, 2], 2]: Found value has wrong type, expects a Hash value, got Sensitive[Hash]"},
    {"Optional[Array[Sensitive[Enum[a, b]]]]", "[{\"__sensitive__\": 5}, 1.5]", "ERR Optional[Array[Sensitive[String[1, 1]]]]:  Found value has wrong type, index 0 expects a Sensitive[String[1, 1]] value, got Sensitive[Integer]\n  Found value has wrong type, index 1 expects a Sensitive[String] value, got Float"},
    {"NotUndef[Enum[a, B, true]]", "\"\"", "PARSE ERROR: Enum parameters must be identifiers or strings"},
    {"Array[ScalarData, 0, 4]", "1.5", "ERR Array[ScalarData, 0, 4]: Found value has wrong type, expects an Array value, got Float"},
    {"ScalarData", "{\"__sensitive__\": true}", "ERR ScalarData: Found value has wrong type, expects a ScalarData value, got Sensitive[Boolean]"},
    {"Sensitive[Variant[Optional[Collection], Hash[String[2], Enum[a, B, true]]]]", "{\"__sensitive__\": {\"__sensitive__\": {\"__sensitive__\": 1}}}", "PARSE ERROR: Enum parameters must be identifiers or strings"},
    {"Tuple[Scalar, Any, Scalar, 1]", "[{\"__sensitive__\": {\"c\": \"abc\"}}, {\"__sensitive__\": {\"__sensitive__\": 12}}]", "ERR Tuple[Scalar, Any, Scalar, 1]: Found value has wrong type, index 0 expects a Scalar value, got Sensitive[Hash]"},
    {"Default", "\"abc\"", "ERR Default: Found value has wrong type, expects a Default value, got String"},
    {"NotUndef[NotUndef[Variant[ScalarData, Integer[5], Collection]]]", "[]", "OK NotUndef[NotUndef[Variant[ScalarData, Integer[5], Collection]]]"},
    {"Iterable[Tuple[Variant[NotUndef, Scalar], 2, default]]", "\"abc\"", "ERR Iterable[Tuple[Variant[NotUndef, Scalar], 2]]: Found value has wrong type, expects an Iterable[Tuple[Variant[NotUndef, Scalar], 2]] value, got String"},
    {"Hash[String, Sensitive]", "1.5", "ERR Hash[String, Sensitive]: Found value has wrong type, expects a Hash value, got Float"},
    {"Hash[String[2], Iterable[Float]]", "{\"__sensitive__\": 12}", "ERR Hash[String[2], Iterable[Float]]: Found value has wrong type, expects a Hash value, got Sensitive[Integer]"},
};

static void test_types_table(void **state)
{
    (void)state;
    int failures = 0;
    for (size_t i = 0; i < sizeof type_cases / sizeof *type_cases; i++) {
        const struct type_case *c = &type_cases[i];
        char *got = check_line(ptype_parse, c->type, c->value);
        if (strcmp(got, c->expected) != 0) {
            print_error("type %s, value %s\n  expected: %s\n       got: %s\n", c->type, c->value, c->expected, got);
            failures++;
        }
        free(got);
    }
    assert_int_equal(failures, 0);
}

/* `puppet lookup --type`: the Scope is the loader context, so names outside the type map fail;
 * recorded with `puppet lookup --type T key` ("Error: Could not run: " left out). */
static const struct type_case cli_cases[] = {
    {"Array[Integer]", "[\"a\", 1]", "ERR Array[Integer]: Found value has wrong type, index 0 expects an Integer value, got String"},
    {"Hash[String, String, 3]", "{\"http\": 80, \"https\": 443}",
     "ERR Hash[String, String, 3]: Found value has wrong type, expects size to be at least 3, got 2"},
    {"Struct[{http => Integer}]", "{\"http\": 80, \"https\": 443}",
     "ERR Struct[{'http' => Integer}]: Found value has wrong type, unrecognized key 'https'"},
    {"Struct[{http => String, https => String}]", "{\"http\": 80, \"https\": 443}",
     "ERR Struct[{'http' => String, 'https' => String}]:  Found value has wrong type, entry 'http' expects a String "
     "value, got Integer\n  Found value has wrong type, entry 'https' expects a String value, got Integer"},
    {"Variant[String, Array[Integer]]", "[\"a\", 1]",
     "ERR Variant[String, Array[Integer]]:  Found value has wrong type, variant 0 expects a String value, got Tuple\n"
     "  Found value has wrong type, variant 1 index 0 expects an Integer value, got String"},
    {"Optional[Enum[a, b]]", "\"info\"",
     "ERR Optional[Enum['a', 'b']]: Found value has wrong type, expects an undef value or a match for Enum['a', 'b'], got 'info'"},
    {"Tuple[String, String]", "[\"a\", 1]",
     "ERR Tuple[String, String]: Found value has wrong type, index 1 expects a String value, got Integer"},
    {"Data", "\"info\"", "PARSE ERROR: private method `load' called for Scope(Class[main]):Puppet::Parser::Scope"},
    {"Foo", "\"info\"", "PARSE ERROR: private method `load' called for Scope(Class[main]):Puppet::Parser::Scope"},
    {"Array[Data]", "[]", "PARSE ERROR: private method `load' called for Scope(Class[main]):Puppet::Parser::Scope"},
    {"Data[1]", "1", "PARSE ERROR: Not a parameterized type <Data>"},
    {"Pattern[/^x/]", "\"info\"", "ERR Pattern[/^x/]: Found value has wrong type, expects a match for Pattern[/^x/], got 'info'"},
    {"NotUndef", "null", "ERR NotUndef: Found value has wrong type, expects a NotUndef value, got Undef"},
    {"Integer[8000, 8079]", "8080",
     "ERR Integer[8000, 8079]: Found value has wrong type, expects an Integer[8000, 8079] value, got Integer[8080, 8080]"},
    {"Sensitive[String]", "\"info\"",
     "ERR Sensitive[String]: Found value has wrong type, expects a Sensitive[String] value, got String"},
    {"Hash[Integer, Integer]", "{\"http\": \"80\"}",
     "ERR Hash[Integer, Integer]:  Found value has wrong type, key of entry 'http' expects an Integer value, got "
     "String\n  Found value has wrong type, entry 'http' expects an Integer value, got String"},
    {"Integer[", "1", "PARSE ERROR: Syntax error at end of input"},
    {"Integer]", "1", "PARSE ERROR: Syntax error at ']' (line: 1, column: 8)"},
    {"integer", "1", "PARSE ERROR: The expression <integer> is not a valid type specification."},
    {"Pattern[/a(/]", "1", "PARSE ERROR: end pattern with unmatched parenthesis: /a(/"},
    {"Integer[2,1]", "1", "PARSE ERROR: 'from' must be less or equal to 'to'. Got (2, 1"},
    {"Enum[a,b,true]", "\"info\"",
     "ERR Enum['a', 'b', true]: Found value has wrong type, expects a match for Enum['a', 'b', true], got 'info'"},
    {"INTEGER", "[\"a\", \"b\"]", "ERR Integer: Found value has wrong type, expects an Integer value, got Tuple"},
    {"Optional[foo]", "[\"a\", \"b\"]",
     "ERR Optional['foo']: Found value has wrong type, expects a value of type Undef or String, got Tuple"},
};

static void test_cli_parse(void **state)
{
    (void)state;
    int failures = 0;
    for (size_t i = 0; i < sizeof cli_cases / sizeof *cli_cases; i++) {
        const struct type_case *c = &cli_cases[i];
        char *got = check_line(ptype_parse_cli, c->type, c->value);
        if (strcmp(got, c->expected) != 0) {
            print_error("cli type %s, value %s\n  expected: %s\n       got: %s\n", c->type, c->value, c->expected, got);
            failures++;
        }
        free(got);
    }
    assert_int_equal(failures, 0);
}

/* The answers recorded in the shared conformance case types-and-defaults. */
static void test_conformance_types_and_defaults(void **state)
{
    (void)state;
    static const struct {
        const char *type, *value, *subject, *message;
    } cases[] = {
        {"String", "null", "Found value", "Found value has wrong type, expects a String value, got Undef"},
        {"String", "8080", "Found value", "Found value has wrong type, expects a String value, got Integer"},
        {"Array[String]", "[\"a\", 1]", "Found value", "Found value has wrong type, index 1 expects a String value, got Integer"},
        {"Hash[String,Integer]", "{\"http\": \"80\", \"https\": 443}", "Found value",
         "Found value has wrong type, entry 'http' expects an Integer value, got String"},
        {"Enum[debug, warn]", "\"info\"", "Found value",
         "Found value has wrong type, expects a match for Enum['debug', 'warn'], got 'info'"},
        {"Integer", "\"5\"", "Default value", "Default value has wrong type, expects an Integer value, got String"},
        {"String", "{\"__sensitive__\": \"s3cr3t\"}", "Found value",
         "Found value has wrong type, expects a String value, got Sensitive[String]"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        herr e = {0};
        ptype *t = ptype_parse_cli(cases[i].type, &e);
        assert_non_null(t);
        hv *v = val(cases[i].value);
        assert_false(ptype_match(t, v));
        char *m = ptype_mismatch(t, v, cases[i].subject);
        assert_string_equal(m, cases[i].message);
        free(m);
        hv_decref(v);
        ptype_free(t);
    }
    static const struct {
        const char *type, *value;
    } ok[] = {
        {"Optional[String]", "null"}, {"Array[String]", "[\"a\", \"b\"]"}, {"Hash[String,Integer]", "{\"http\": 80}"},
        {"Enum[debug, info, warn]", "\"info\""}, {"String", "\"5\""}, {"Sensitive[String]", "{\"__sensitive__\": \"x\"}"},
    };
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        herr e = {0};
        ptype *t = ptype_parse_cli(ok[i].type, &e);
        assert_non_null(t);
        hv *v = val(ok[i].value);
        assert_true(ptype_match(t, v));
        hv_decref(v);
        ptype_free(t);
    }
}

static void test_error_kinds(void **state)
{
    (void)state;
    /* Puppet::ParseError family: a Puppet error; ArgumentError, RegexpError, NoMethodError: Ruby errors */
    static const struct {
        const char *type;
        herr_kind kind;
    } cases[] = {
        {"Integer[", HERR_PUPPET},     {"integer", HERR_PUPPET},       {"Integer[1,2,3]", HERR_PUPPET},
        {"Enum[1]", HERR_PUPPET},      {"Any[1]", HERR_PUPPET},        {"Integer[2,1]", HERR_ERROR},
        {"Pattern[/a(/]", HERR_ERROR}, {"Struct[{'' => Integer}]", HERR_ERROR},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        herr e = {0};
        assert_null(ptype_parse(cases[i].type, &e));
        assert_int_equal(e.kind, cases[i].kind);
        herr_clear(&e);
    }
    herr e = {0};
    assert_null(ptype_parse_cli("Data", &e));
    assert_int_equal(e.kind, HERR_ERROR);
    herr_clear(&e);
    ptype *t = ptype_parse(NULL, &e);
    assert_null(t);
    herr_clear(&e);
}

static void test_name_of_value(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"\"x\"", "String"},   {"1", "Integer"},     {"1.5", "Float"},
        {"true", "Boolean"},   {"null", "Undef"},    {"[1, \"a\"]", "Tuple"},
        {"[]", "Array"},       {"{\"a\": 1}", "Struct"}, {"{}", "Hash"},
        {"{\"\": 1}", "Hash"}, {"{\"__sensitive__\": \"x\"}", "Sensitive[String]"},
        {"{\"__sensitive__\": [1]}", "Sensitive[Array]"}, {"{\"__sym__\": \"foo\"}", "Runtime"},
        {"{\"__big__\": \"123456789012345678901234567890\"}", "Integer"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        hv *v = val(cases[i][0]);
        char *n = ptype_name_of_value(v);
        assert_string_equal(n, cases[i][1]);
        free(n);
        hv_decref(v);
    }
}

struct conv_case {
    const char *spec, *value, *expected;
};

/* Puppet's new(T, value, *args), as convert_to calls it: "OK <JSON>" for the result ("OKS
 * <String.new form>" when hash keys are not strings), "ERR: <message>", or "LOOKUP: <message>"
 * when the type does not parse. */
static const struct conv_case conv_cases[] = {
    {"\"Integer\"", "\"8080\"", "OK 8080"},
    {"[\"Integer\", 16]", "\"10\"", "OK 16"},
    {"[\"Integer\", 16]", "\"ff\"", "ERR: 'new' The string 'ff' cannot be converted to Integer"},
    {"[\"Integer\", 2]", "\"101\"", "OK 5"},
    {"\"Integer\"", "\"0x1F\"", "OK 31"},
    {"\"Integer\"", "\"0755\"", "OK 493"},
    {"\"Float\"", "\"0.5\"", "OK 0.5"},
    {"\"String\"", "42", "OK \"42\""},
    {"\"String\"", "1.5", "OK \"1.500000\""},
    {"\"Boolean\"", "\"yes\"", "OK true"},
    {"\"Boolean\"", "\"false\"", "OK false"},
    {"\"Integer\"", "\"abc\"", "ERR: 'new' The string 'abc' cannot be converted to Integer"},
    {"[\"Array\", true]", "\"abc\"", "OK [\"abc\"]"},
    {"[\"Array\", true]", "[\"a\", \"b\"]", "OK [\"a\",\"b\"]"},
    {"\"Array\"", "\"abc\"", "OK [\"a\",\"b\",\"c\"]"},
    {"\"Array\"", "{\"a\": 1, \"b\": 2}", "OK [[\"a\",1],[\"b\",2]]"},
    {"\"NoSuchType\"", "\"whatever\"", "ERR: Creation of new instance of type 'TypeReference['NoSuchType']' is not supported"},
    {"\"Integer\"", "{\"port\": \"80\"}", "ERR:  Integer.new has wrong type, expects a value for key 'from'\n  Integer.new has wrong type, unrecognized key 'port'"},
    {"\"String\"", "[\"a\", \"b\"]", "OK \"['a', 'b']\""},
    {"\"Integer\"", "\"09\"", "ERR: invalid value for Integer(): \"09\""},
    {"\"Integer\"", "\"- 5\"", "OK -5"},
    {"\"Integer\"", "\"-0x1F\"", "OK -31"},
    {"\"Integer\"", "\"0b101\"", "OK 5"},
    {"[\"Integer\", 16]", "\"0x1F\"", "OK 31"},
    {"[\"Integer\", 16]", "\"0b11\"", "OK 2833"},
    {"[\"Integer\", 10]", "\"0755\"", "OK 755"},
    {"[\"Integer\", 8]", "\"0755\"", "OK 493"},
    {"[\"Integer\", 8]", "\"89\"", "ERR: invalid value for Integer(): \"89\""},
    {"[\"Integer\", 2]", "\"12\"", "ERR: invalid value for Integer(): \"12\""},
    {"[\"Integer\", 3]", "\"12\"", "ERR: Illegal radix: 3, expected 2, 8, 10, 16, or default"},
    {"[\"Integer\", \"16\"]", "\"12\"", "ERR: The function 'new' was called with arguments it does not accept. It expects one of:\n  (Convertible = Variant[Numeric, Boolean, Pattern[/\\A[+-]?\\s*(?:(?:\\d+)|(?:0[xX][0-9A-Fa-f]+)|(?:0[bB][01]+))\\z/], Timespan, Timestamp] from, Radix = Variant[Default, Integer[2, 2], Integer[8, 8], Integer[10, 10], Integer[16, 16]] radix?, Boolean abs?)\n    rejected: parameter 'radix' expects a Radix = Variant[Default, Integer[2, 2], Integer[8, 8], Integer[10, 10], Integer[16, 16]] value, got String\n  (NamedArgs = Struct[{'from' => Convertible = Variant[Numeric, Boolean, Pattern[/\\A[+-]?\\s*(?:(?:\\d+)|(?:0[xX][0-9A-Fa-f]+)|(?:0[bB][01]+))\\z/], Timespan, Timestamp], Optional['radix'] => Radix = Variant[Default, Integer[2, 2], Integer[8, 8], Integer[10, 10], Integer[16, 16]], Optional['abs'] => Boolean}] hash_args)\n    rejected: expects 1 argument, got 2"},
    {"[\"Integer\", 16, true]", "\"-12\"", "OK 18"},
    {"[\"Integer\", 16, 5]", "\"-12\"", "ERR: The function 'new' was called with arguments it does not accept. It expects one of:\n  (Convertible = Variant[Numeric, Boolean, Pattern[/\\A[+-]?\\s*(?:(?:\\d+)|(?:0[xX][0-9A-Fa-f]+)|(?:0[bB][01]+))\\z/], Timespan, Timestamp] from, Radix = Variant[Default, Integer[2, 2], Integer[8, 8], Integer[10, 10], Integer[16, 16]] radix?, Boolean abs?)\n    rejected: parameter 'abs' expects a Boolean value, got Integer\n  (NamedArgs = Struct[{'from' => Convertible = Variant[Numeric, Boolean, Pattern[/\\A[+-]?\\s*(?:(?:\\d+)|(?:0[xX][0-9A-Fa-f]+)|(?:0[bB][01]+))\\z/], Timespan, Timestamp], Optional['radix'] => Radix = Variant[Default, Integer[2, 2], Integer[8, 8], Integer[10, 10], Integer[16, 16]], Optional['abs'] => Boolean}] hash_args)\n    rejected: expects 1 argument, got 3"},
    {"[\"Integer\", 16, true, 4]", "\"-12\"", "ERR: 'new' expects between 1 and 3 arguments, got 4"},
    {"\"Integer\"", "1.9", "OK 1"},
    {"\"Integer\"", "-1.9", "OK -1"},
    {"\"Integer\"", "1e30", "OK 1000000000000000019884624838656"},
    {"\"Integer\"", "true", "OK 1"},
    {"\"Integer\"", "false", "OK 0"},
    {"\"Integer\"", "12", "OK 12"},
    {"\"Integer\"", "null", "ERR: 'new' Value of type Undef cannot be converted to Integer"},
    {"\"Integer\"", "[1, 2]", "ERR: 'new' Value of type Array[Integer] cannot be converted to Integer"},
    {"\"Integer\"", "[]", "ERR: 'new' Value of type Array[Unit] cannot be converted to Integer"},
    {"\"Integer\"", "{\"from\": \"12\"}", "OK 12"},
    {"\"Integer\"", "{\"from\": \"12\", \"radix\": 16}", "OK 18"},
    {"\"Integer\"", "{\"from\": \"12\", \"radix\": 3}", "ERR: Illegal radix: 3, expected 2, 8, 10, 16, or default"},
    /* the radix as Ruby's to_s gives it (Array#inspect: \u2028 escaped; puppet apply -e
     * 'notice(Integer.new({from => "12", radix => ["a\u2028", "b\\"]}))') */
    {"\"Integer\"", "{\"from\": \"12\", \"radix\": [\"a\\u2028\", \"b\\\\\"]}", "ERR: Illegal radix: [\"a\\u2028\", \"b\\\\\"], expected 2, 8, 10, 16, or default"},
    {"\"Integer\"", "{\"from\": \"ff\", \"radix\": 16}", "ERR: 'new' The string 'ff' cannot be converted to Integer"},
    {"\"Integer\"", "{\"from\": \"12\", \"abs\": \"x\"}", "ERR: Integer.new has wrong type, entry 'abs' expects a Boolean value, got String"},
    {"\"Integer\"", "{\"from\": \"-12\", \"abs\": true}", "OK 12"},
    {"\"Integer\"", "\"123456789012345678901234567890\"", "OK 123456789012345678901234567890"},
    {"\"Integer\"", "\"0x123456789012345678901234567890\"", "OK 94522879687365475552814062743484560"},
    {"\"Integer\"", "\"+7\"", "OK 7"},
    {"\"Integer\"", "\" 7\"", "OK 7"},
    {"\"Integer\"", "\"7 \"", "ERR: 'new' The string '7 ' cannot be converted to Integer"},
    {"\"Integer\"", "\"-\\n5\"", "ERR: invalid value for Integer(): \"-\\n5\""},
    {"\"Integer[0, 10]\"", "\"20\"", "ERR: Converted value from Integer[0, 10].new() has wrong type, expects an Integer[0, 10] value, got Integer[20, 20]"},
    {"\"Integer[0, 10]\"", "\"5\"", "OK 5"},
    {"\"Float\"", "\"abc\"", "ERR: 'new_float' The string 'abc' cannot be converted to Float"},
    {"\"Float\"", "\"1e5\"", "OK 100000.0"},
    {"\"Float\"", "\"0x1F\"", "OK 31.0"},
    {"\"Float\"", "\"0755\"", "OK 755.0"},
    {"\"Float\"", "\"0b101\"", "OK 5.0"},
    {"\"Float\"", "\"0\"", "ERR: undefined method `casecmp' for nil:NilClass"},
    {"\"Float\"", "\"00\"", "OK 0.0"},
    {"\"Float\"", "\"- 1.5\"", "OK -1.5"},
    {"\"Float\"", "5", "OK 5.0"},
    {"\"Float\"", "true", "OK 1.0"},
    {"\"Float\"", "null", "ERR: 'new_float' Value of type Undef cannot be converted to Float"},
    {"\"Float\"", "[1]", "ERR: 'new_float' Value of type Array[Integer] cannot be converted to Float"},
    {"[\"Float\", true]", "\"-1.5\"", "OK 1.5"},
    {"\"Float\"", "{\"from\": \"1.5\"}", "OK 1.5"},
    {"\"Float\"", "{\"from\": \"x\"}", "ERR: 'new_float' Value of type Hash[String, String] cannot be converted to Float"},
    {"\"Numeric\"", "\"abc\"", "ERR: 'new_numeric' The string 'abc' cannot be converted to Numeric"},
    {"\"Numeric\"", "\"1.5\"", "OK 1.5"},
    {"\"Numeric\"", "\"0755\"", "OK 493"},
    {"\"Numeric\"", "\"09\"", "ERR: 'new_numeric' The string '09' cannot be converted to Numeric"},
    {"\"Numeric\"", "\"0x1F\"", "OK 31"},
    {"\"Numeric\"", "\"-0x1F\"", "OK -31"},
    {"\"Numeric\"", "\"0b101\"", "OK 5"},
    {"\"Numeric\"", "\"-0b101\"", "ERR: Converted value from Numeric.new() has wrong type, expects a Numeric value, got Undef"},
    {"\"Numeric\"", "\"0e5\"", "ERR: Converted value from Numeric.new() has wrong type, expects a Numeric value, got Undef"},
    {"\"Numeric\"", "\"1e400\"", "ERR: Converted value from Numeric.new() has wrong type, expects a Numeric value, got Undef"},
    {"\"Numeric\"", "\"12\"", "OK 12"},
    {"\"Numeric\"", "\"-12\"", "OK -12"},
    {"\"Numeric\"", "\" 12 \"", "ERR: 'new_numeric' The string ' 12 ' cannot be converted to Numeric"},
    {"\"Numeric\"", "true", "OK 1"},
    {"[\"Numeric\", true]", "\"-3.5\"", "OK 3.5"},
    {"\"Boolean\"", "\"abc\"", "ERR: 'new_boolean' The string 'abc' cannot be converted to Boolean"},
    {"\"Boolean\"", "\"Yes\"", "OK true"},
    {"\"Boolean\"", "\"N\"", "OK false"},
    {"\"Boolean\"", "\"TRUE\"", "OK true"},
    {"\"Boolean\"", "0", "OK false"},
    {"\"Boolean\"", "0.0", "OK false"},
    {"\"Boolean\"", "2.5", "OK true"},
    {"\"Boolean\"", "null", "ERR: 'new_boolean' Value of type Undef cannot be converted to Boolean"},
    {"\"Boolean\"", "[]", "ERR: 'new_boolean' Value of type Array[Unit] cannot be converted to Boolean"},
    {"\"Boolean[true]\"", "\"no\"", "ERR: Converted value from Boolean[true].new() has wrong type, expects a Boolean[true] value, got Boolean[false]"},
    {"\"String\"", "null", "OK \"\""},
    {"\"String\"", "true", "OK \"true\""},
    {"\"String\"", "{\"a\": 1}", "OK \"{'a' => 1}\""},
    {"[\"String\", \"%x\"]", "255", "OK \"ff\""},
    {"[\"String\", \"%#x\"]", "-255", "OK \"0x..f01\""},
    {"[\"String\", \"%05d\"]", "42", "OK \"00042\""},
    {"[\"String\", \"%-5d|\"]", "42", "ERR: The format '%-5d|' is not a valid format on the form '%<flags><width>.<prec><format>'"},
    {"[\"String\", \"%.2f\"]", "3.14159", "OK \"3.14\""},
    {"[\"String\", \"%e\"]", "12345.678", "OK \"1.234568e+04\""},
    {"[\"String\", \"%s\"]", "1.5", "OK \"1.5\""},
    {"[\"String\", \"%p\"]", "\"it's\"", "OK \"'it\\\\'s'\""},
    {"[\"String\", \"%#p\"]", "\"x\"", "OK \"\\\"x\\\"\""},
    {"[\"String\", \"%u\"]", "\"abc\"", "OK \"ABC\""},
    {"[\"String\", \"%C\"]", "\"foo::bar\"", "OK \"Foo::Bar\""},
    {"[\"String\", \"%t\"]", "\"  x  \"", "OK \"x\""},
    {"[\"String\", \"%y\"]", "true", "OK \"yes\""},
    {"[\"String\", \"%#Y\"]", "false", "OK \"N\""},
    {"[\"String\", \"%d\"]", "true", "OK \"1\""},
    {"[\"String\", \"%b\"]", "5", "OK \"101\""},
    {"[\"String\", \"%o\"]", "8", "OK \"10\""},
    {"[\"String\", \"%x\"]", "1.9", "OK \"1\""},
    {"[\"String\", \"%q\"]", "1", "ERR: Illegal format 'q' specified for value of Integer type - expected one of the characters 'dxXobBeEfgGaAspc'"},
    {"[\"String\", \"%5s\"]", "\"ab\"", "OK \"   ab\""},
    {"[\"String\", \"%.1s\"]", "\"ab\"", "OK \"a\""},
    {"[\"String\", \"bad\"]", "1", "ERR: The format 'bad' is not a valid format on the form '%<flags><width>.<prec><format>'"},
    {"[\"String\", \"%10.3f\"]", "3.14159", "OK \"     3.142\""},
    {"[\"String\", \"%+d\"]", "5", "OK \"+5\""},
    {"[\"String\", \"% d\"]", "5", "OK \" 5\""},
    {"[\"String\", \"%c\"]", "65", "OK \"A\""},
    {"[\"String\", \"%n\"]", "null", "OK \"nil\""},
    {"[\"String\", \"\"]", "1", "ERR: 'new_string' parameter 'string_formats' expects a Formats = Variant[Default, String[1], TypeMap = Hash[Type, Variant[Format = Pattern[/^%([\\s\\[+#0{<(|-]*)([1-9][0-9]*)?(?:\\.([0-9]+))?([a-zA-Z])$/], ContainerFormat = Struct[{Optional['format'] => Format = Pattern[/^%([\\s\\[+#0{<(|-]*)([1-9][0-9]*)?(?:\\.([0-9]+))?([a-zA-Z])$/], Optional['separator'] => String, Optional['separator2'] => String, Optional['string_formats'] => Hash[Type, Format = Pattern[/^%([\\s\\[+#0{<(|-]*)([1-9][0-9]*)?(?:\\.([0-9]+))?([a-zA-Z])$/]]}]]]] value, got String"},
    {"[\"String\", 5]", "1", "ERR: 'new_string' parameter 'string_formats' expects a Formats = Variant[Default, String[1], TypeMap = Hash[Type, Variant[Format = Pattern[/^%([\\s\\[+#0{<(|-]*)([1-9][0-9]*)?(?:\\.([0-9]+))?([a-zA-Z])$/], ContainerFormat = Struct[{Optional['format'] => Format = Pattern[/^%([\\s\\[+#0{<(|-]*)([1-9][0-9]*)?(?:\\.([0-9]+))?([a-zA-Z])$/], Optional['separator'] => String, Optional['separator2'] => String, Optional['string_formats'] => Hash[Type, Format = Pattern[/^%([\\s\\[+#0{<(|-]*)([1-9][0-9]*)?(?:\\.([0-9]+))?([a-zA-Z])$/]]}]]]] value, got Integer"},
    {"\"Array\"", "5", "OK [0,1,2,3,4]"},
    {"\"Array\"", "0", "OK []"},
    {"\"Array\"", "-1", "ERR: 'new_array' Value of type Integer cannot be converted to Array"},
    {"\"Array\"", "1.5", "ERR: 'new_array' Value of type Float cannot be converted to Array"},
    {"\"Array\"", "null", "ERR: 'new_array' Value of type Undef cannot be converted to Array"},
    {"\"Array\"", "[1]", "OK [1]"},
    {"[\"Array\", false]", "\"ab\"", "OK [\"a\",\"b\"]"},
    {"[\"Array\", true]", "{\"a\": 1}", "OK [{\"a\":1}]"},
    {"[\"Array\", 5]", "\"ab\"", "ERR: 'new_array' parameter 'wrap' expects a Boolean value, got Integer"},
    {"[\"Array\", true, 1]", "\"ab\"", "ERR: 'new_array' expects between 1 and 2 arguments, got 3"},
    {"\"Array[Integer]\"", "\"ab\"", "ERR:  Converted value from Array[Integer].new() has wrong type, index 0 expects an Integer value, got String\n  Converted value from Array[Integer].new() has wrong type, index 1 expects an Integer value, got String"},
    {"\"Tuple[String, String]\"", "\"ab\"", "OK [\"a\",\"b\"]"},
    {"\"Hash\"", "[\"a\", 1, \"b\", 2]", "OK {\"a\":1,\"b\":2}"},
    {"\"Hash\"", "[\"a\", 1, \"b\"]", "ERR: odd number of arguments for Hash"},
    {"\"Hash\"", "[[\"a\", 1], [\"b\", 2]]", "OK {\"a\":1,\"b\":2}"},
    {"\"Hash\"", "[[\"a\", 1], [\"a\", 2]]", "OK {\"a\":2}"},
    {"\"Hash\"", "[]", "OK {}"},
    {"\"Hash\"", "\"abcd\"", "OK {\"a\":\"b\",\"c\":\"d\"}"},
    {"\"Hash\"", "\"abc\"", "ERR: odd number of arguments for Hash"},
    {"\"Hash\"", "4", "OKS {0 => 1, 2 => 3}"},
    {"\"Hash\"", "3", "ERR: odd number of arguments for Hash"},
    {"\"Hash\"", "1.5", "ERR: Value of type Float cannot be converted to Hash"},
    {"\"Hash\"", "null", "ERR: Value of type Undef cannot be converted to Hash"},
    {"\"Hash\"", "true", "ERR: Value of type Boolean cannot be converted to Hash"},
    {"[\"Hash\", \"tree\"]", "[[[\"a\", \"b\"], 1], [[\"a\", \"c\"], 2], [[\"d\"], 3]]", "OK {\"a\":{\"b\":1,\"c\":2},\"d\":3}"},
    {"[\"Hash\", \"hash_tree\"]", "[[[\"a\"], [1, 2]], [[], {\"x\": 1}]]", "OKS {'a' => {0 => 1, 1 => 2}, 'x' => 1}"},
    {"[\"Hash\", \"tree\"]", "[[[\"a\"], 1]]", "OK {\"a\":1}"},
    {"\"Struct[{a => Integer}]\"", "[\"a\", \"x\"]", "ERR: Converted value from Struct[{'a' => Integer}].new() has wrong type, entry 'a' expects an Integer value, got String"},
    {"\"Struct[{a => Integer}]\"", "[\"a\", 1]", "OK {\"a\":1}"},
    {"\"Sensitive[Integer]\"", "\"x\"", "ERR: Converted value from Sensitive[Integer].new() has wrong type, expects a Sensitive[Integer] value, got Sensitive[String]"},
    {"[\"Sensitive\", 1]", "\"x\"", "ERR: 'new_Sensitive' expects 1 argument, got 2"},
    {"\"Optional[Integer]\"", "null", "OK null"},
    {"\"Optional[Integer]\"", "\"12\"", "OK 12"},
    {"\"Optional[Integer]\"", "\"x\"", "ERR: 'new' The string 'x' cannot be converted to Integer"},
    {"\"Optional\"", "\"x\"", "ERR: undefined method `new_function' for nil:NilClass"},
    {"\"NotUndef[Integer]\"", "\"12\"", "OK 12"},
    {"\"NotUndef\"", "null", "ERR: Converted value from NotUndef.new() has wrong type, expects a NotUndef value, got Undef"},
    {"\"NotUndef\"", "\"x\"", "OK \"x\""},
    {"\"Data\"", "\"x\"", "OK \"x\""},
    {"\"Data\"", "{\"__sym__\": \"x\"}", "ERR: Creation of new instance of type 'Variant[ScalarData, Undef, Hash[String, Data], Array[Data]]' is not supported"},
    {"[\"Data\", 1]", "\"x\"", "ERR: Creation of new instance of type 'Variant[ScalarData, Undef, Hash[String, Data], Array[Data]]' is not supported"},
    {"\"Scalar\"", "[1]", "ERR: Creation of new instance of type 'Scalar' is not supported"},
    {"\"Enum[a, b]\"", "\"c\"", "ERR: Creation of new instance of type 'Enum['a', 'b']' is not supported"},
    {"\"Enum[a, b]\"", "\"a\"", "OK \"a\""},
    {"\"Variant[Integer, String]\"", "1.5", "ERR: Creation of new instance of type 'Variant[Integer, String]' is not supported"},
    {"\"Any\"", "1", "OK 1"},
    {"\"Undef\"", "1", "ERR: Creation of new instance of type 'Undef' is not supported"},
    {"\"Default\"", "1", "ERR: Creation of new instance of type 'Default' is not supported"},
    {"\"File\"", "\"x\"", "ERR: Creation of new instance of type 'File' is not supported"},
    {"\"Collection\"", "\"x\"", "ERR: Creation of new instance of type 'Collection' is not supported"},
    {"\"Pattern[/a/]\"", "\"b\"", "ERR: Creation of new instance of type 'Pattern[/a/]' is not supported"},
    {"\"Iterable\"", "1.5", "ERR: Creation of new instance of type 'Iterable' is not supported"},
    {"\"Runtime[ruby, 'Symbol']\"", "1", "ERR: Creation of new instance of type 'Runtime[ruby, 'Symbol']' is not supported"},
    {"\"Callable\"", "1", "ERR: Creation of new instance of type 'Callable' is not supported"},
    {"\"RichDataKey\"", "[1]", "ERR: Creation of new instance of type 'Variant[String, Numeric]' is not supported"},
    {"\"Integer[\"", "\"1\"", "LOOKUP: could not parse 'Integer[', error: 'Syntax error at end of input"},
    {"\"integer\"", "\"1\"", "LOOKUP: could not parse 'integer', error: 'The expression <integer> is not a valid type specification."},
    {"\"Integer[2,1]\"", "\"1\"", "LOOKUP: could not parse 'Integer[2,1]', error: ''from' must be less or equal to 'to'. Got (2, 1"},
    {"\"Pattern[/a(/]\"", "\"1\"", "LOOKUP: could not parse 'Pattern[/a(/]', error: 'end pattern with unmatched parenthesis: /a(/"},
    {"5", "\"1\"", "ERR: 'new' parameter 'type' expects a Type value, got Integer"},
    {"null", "\"1\"", "ERR: 'new' parameter 'type' expects a Type value, got Undef"},
    {"[]", "\"1\"", "ERR: 'new' parameter 'type' expects a Type value, got Undef"},
    {"[5]", "\"1\"", "ERR: 'new' parameter 'type' expects a Type value, got Integer"},
    {"{\"a\": 1}", "\"1\"", "ERR: 'new' parameter 'type' expects a Type value, got Struct"},
    {"[\"Integer\", {\"__sym__\": \"default\"}]", "\"12\"", "OK 12"},
    {"[\"Integer\", {\"__sym__\": \"default\"}, true]", "\"-12\"", "OK 12"},
    {"\"Boolean\"", "{\"__sym__\": \"x\"}", "ERR: 'new_boolean' Value of type Runtime[ruby, 'Symbol'] cannot be converted to Boolean"},
    {"\"String\"", "{\"__sym__\": \"x\"}", "OK \"x\""},
    {"\"Array\"", "{\"__sensitive__\": [1]}", "ERR: 'new_array' Value of type Sensitive[Array[Integer]] cannot be converted to Array"},
    {"\"Integer\"", "{\"__sensitive__\": 1}", "ERR: 'new' Value of type Sensitive[Integer] cannot be converted to Integer"},
    {"\"Init\"", "\"x\"", "ERR: Creation of new instance of type 'Init' is not supported"},
    {"[\"String\", \"%x\"]", "-255", "OK \"..f01\""},
    {"[\"String\", \"%#x\"]", "-255", "OK \"0x..f01\""},
    {"[\"String\", \"%+x\"]", "-255", "OK \"-ff\""},
    {"[\"String\", \"% x\"]", "-255", "OK \"-ff\""},
    {"[\"String\", \"%o\"]", "-8", "OK \"..70\""},
    {"[\"String\", \"%b\"]", "-5", "OK \"..1011\""},
    {"[\"String\", \"%#b\"]", "-5", "OK \"0b..1011\""},
    {"[\"String\", \"%X\"]", "-255", "OK \"..F01\""},
    {"[\"String\", \"%08x\"]", "-255", "OK \"..ffff01\""},
    {"[\"String\", \"%.5x\"]", "-255", "OK \"..f01\""},
    {"[\"String\", \"%x\"]", "-1", "OK \"..f\""},
    {"[\"String\", \"%x\"]", "-16", "OK \"..f0\""},
    {"[\"String\", \"%o\"]", "-1", "OK \"..7\""},
    {"[\"String\", \"%#o\"]", "-8", "OK \"..70\""},
    {"[\"String\", \"%10x\"]", "-255", "OK \"     ..f01\""},
    {"[\"String\", \"%-10x|\"]", "-255", "ERR: The format '%-10x|' is not a valid format on the form '%<flags><width>.<prec><format>'"},
    {"[\"String\", \"%o\"]", "-9", "OK \"..767\""},
    {"[\"String\", \"%b\"]", "-1", "OK \"..1\""},
    {"[\"String\", \"%b\"]", "-2", "OK \"..10\""},
    {"\"Init\"", "\"x\"", "ERR: Creation of new instance of type 'Init' is not supported"},
    {"[\"String\", \"%s\"]", "{\"__sym__\": \"s\"}", "OK \"s\""},
    {"[\"String\", \"%p\"]", "{\"__sym__\": \"s\"}", "OK \"'s'\""},
    {"[\"String\", \"%d\"]", "{\"__sym__\": \"s\"}", "ERR: Illegal format 'd' specified for value of Runtime type - expected one of the characters 'spq'"},
    {"[\"String\", \"%D\"]", "{\"__sym__\": \"default\"}", "OK \"Default\""},
    {"[\"String\", \"%s\"]", "{\"__sym__\": \"undef\"}", "OK \"\""},
    {"[\"String\", \"%s\"]", "[[\"a\", 1], [\"b\", 2]]", "OK \"[['a', 1], ['b', 2]]\""},
    {"[\"String\", \"%a\"]", "{\"a\": 1}", "OK \"[['a', 1]]\""},
    {"[\"String\", \"%d\"]", "[1]", "ERR: Illegal format 'd' specified for value of Array type - expected one of the characters 'asp'"},
    {"[\"String\", \"%p\"]", "{\"__sensitive__\": 1}", "OK \"#<Sensitive [value redacted]>\""},
    {"[\"String\", \"%d\"]", "{\"__sensitive__\": 1}", "ERR: can't convert Puppet::Pops::Types::PSensitiveType::Sensitive into Integer"},
    {"[\"String\", \"%q\"]", "{\"__sensitive__\": 1}", "ERR: malformed format string - %q"},
};

static void test_convert_table(void **state)
{
    (void)state;
    int failures = 0;
    for (size_t i = 0; i < sizeof conv_cases / sizeof *conv_cases; i++) {
        const struct conv_case *c = &conv_cases[i];
        hv *spec = val(c->spec), *v = val(c->value);
        herr e = {0};
        hv *r = ptype_convert(spec, v, &e);
        bool ok;
        char *got;
        if (r) {
            char *j = hjson_debug(r);
            got = xasprintf("OK %s", j);
            free(j);
            ok = false;
            if (!strncmp(c->expected, "OKS ", 4)) { /* non-string keys: compared in Puppet's string form */
                sbuf b = {0};
                puppet_string(&b, r);
                ok = strcmp(sb_str(&b), c->expected + 4) == 0;
                sb_free(&b);
            } else if (!strncmp(c->expected, "OK ", 3)) {
                hv *want = val(c->expected + 3);
                ok = hv_eql(r, want);
                hv_decref(want);
            }
            hv_decref(r);
        } else {
            got = xasprintf("%s: %s", e.kind == HERR_LOOKUP ? "LOOKUP" : "ERR", e.msg);
            ok = strcmp(got, c->expected) == 0;
            herr_clear(&e);
        }
        if (!ok) {
            print_error("convert %s of %s\n  expected: %s\n       got: %s\n", c->spec, c->value, c->expected, got);
            failures++;
        }
        free(got);
        hv_decref(spec);
        hv_decref(v);
    }
    assert_int_equal(failures, 0);
}

static hv *convert(const char *spec, const char *value, herr *e)
{
    hv *s = val(spec), *v = val(value);
    hv *r = ptype_convert(s, v, e);
    hv_decref(s);
    hv_decref(v);
    return r;
}

/* The shared conformance cases convert-to-scalars and convert-to-structures. */
static void test_convert_conformance(void **state)
{
    (void)state;
    static const char *const ok[][3] = {
        {"\"Integer\"", "\"8080\"", "8080"},       {"[\"Integer\", 16]", "\"10\"", "16"},
        {"[\"Integer\", 2]", "\"101\"", "5"},      {"\"Integer\"", "\"0x1F\"", "31"},
        {"\"Integer\"", "\"0755\"", "493"},        {"\"Float\"", "\"0.5\"", "0.5"},
        {"\"String\"", "42", "\"42\""},            {"\"String\"", "1.50", "\"1.500000\""},
        {"\"Boolean\"", "\"yes\"", "true"},        {"\"Boolean\"", "\"false\"", "false"},
        {"\"Array\"", "\"abc\"", "[\"a\", \"b\", \"c\"]"}, {"[\"Array\", true]", "\"abc\"", "[\"abc\"]"},
        {"[\"Array\", true]", "[\"a\", \"b\"]", "[\"a\", \"b\"]"},
        {"\"Array\"", "{\"a\": 1, \"b\": 2}", "[[\"a\", 1], [\"b\", 2]]"},
        {"\"Integer\"", "\"80\"", "80"},           {"\"String\"", "[\"a\", \"b\"]", "\"['a', 'b']\""},
    };
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        herr e = {0};
        hv *r = convert(ok[i][0], ok[i][1], &e);
        if (!r)
            print_error("%s of %s: %s\n", ok[i][0], ok[i][1], e.msg);
        assert_non_null(r);
        assert_value_json(r, ok[i][2]);
        hv_decref(r);
    }
    static const char *const bad[][3] = {
        {"[\"Integer\", 16]", "\"ff\"", "'new' The string 'ff' cannot be converted to Integer"},
        {"\"Integer\"", "\"abc\"", "'new' The string 'abc' cannot be converted to Integer"},
        {"\"NoSuchType\"", "\"whatever\"", "Creation of new instance of type 'TypeReference['NoSuchType']' is not supported"},
        {"\"Integer\"", "{\"port\": \"80\"}",
         " Integer.new has wrong type, expects a value for key 'from'\n  Integer.new has wrong type, unrecognized key 'port'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        herr e = {0};
        hv *r = convert(bad[i][0], bad[i][1], &e);
        assert_null(r);
        assert_string_equal(e.msg, bad[i][2]);
        assert_int_equal(e.kind, HERR_ERROR);
        herr_clear(&e);
    }
    /* Sensitive wraps; a Sensitive value is left as it is */
    herr e = {0};
    hv *r = convert("\"Sensitive\"", "\"s3cr3t\"", &e);
    assert_true(hv_is(r, HV_SENSITIVE));
    assert_value_json(hv_sensitive_inner(r), "\"s3cr3t\"");
    herr se = {0};
    ptype *t = ptype_parse_cli("Sensitive[String]", &se);
    assert_true(ptype_match(t, r));
    ptype_free(t);
    t = ptype_parse_cli("String", &se);
    char *m = ptype_mismatch(t, r, "Found value");
    assert_string_equal(m, "Found value has wrong type, expects a String value, got Sensitive[String]");
    free(m);
    ptype_free(t);
    hv_decref(r);
    r = convert("\"Sensitive[Integer]\"", "\"x\"", &e);
    assert_null(r);
    assert_string_equal(e.msg, "Converted value from Sensitive[Integer].new() has wrong type, expects a "
                               "Sensitive[Integer] value, got Sensitive[String]");
    herr_clear(&e);
    r = convert("\"String\"", "{\"__sensitive__\": \"x\"}", &e);
    assert_value_json(r, "\"Sensitive [value redacted]\"");
    hv_decref(r);
    /* a type that does not parse */
    r = convert("\"Integer[\"", "\"1\"", &e);
    assert_null(r);
    assert_int_equal(e.kind, HERR_LOOKUP);
    assert_string_equal(e.msg, "could not parse 'Integer[', error: 'Syntax error at end of input");
    herr_clear(&e);
}

struct string_case {
    const char *value, *expected;
};

/* Puppet's String.new(value) with the default formats. */
static const struct string_case string_cases[] = {
    {"\"abc\"", "abc"},
    {"1", "1"},
    {"1.5", "1.500000"},
    {"100.0", "100.000000"},
    {"1e20", "100000000000000000000.000000"},
    {"1e-5", "0.000010"},
    {"-0.0", "-0.000000"},
    {"true", "true"},
    {"null", ""},
    {"[]", "[]"},
    {"{}", "{}"},
    {"[\"a\", 1, 1.5, null, true, [2, \"b\"], {\"c\": \"d\"}]", "['a', 1, 1.5, undef, true, [2, 'b'], {'c' => 'd'}]"},
    {"{\"a\": 1, \"b\": [1, 2], \"c\": {\"d\": null}}", "{'a' => 1, 'b' => [1, 2], 'c' => {'d' => undef}}"},
    {"{\"1\": \"x\"}", "{'1' => 'x'}"},
    {"[\"it's\", \"back\\\\slash\", \"tab\\there\", \"dollar$\", \"quote\\\"\", \"é\"]", "['it\\'s', 'back\\slash', \"tab\\there\", 'dollar$', 'quote\"', 'é']"},
    {"[{\"__sensitive__\": \"x\"}]", "[#<Sensitive [value redacted]>]"},
    {"{\"__sensitive__\": \"x\"}", "Sensitive [value redacted]"},
    {"{\"__sym__\": \"foo\"}", "foo"},
    {"[{\"__sym__\": \"foo\"}]", "['foo']"},
    {"[{\"__sym__\": \"default\"}, {\"__sym__\": \"undef\"}]", "[default, undef]"},
    {"{\"__big__\": \"123456789012345678901234567890\"}", "123456789012345678901234567890"},
    {"[{\"__big__\": \"123456789012345678901234567890\"}]", "[123456789012345678901234567890]"},
    {"123456789.123", "123456789.123000"},
    {"[0.1, 1.0e16, 1.0e15, 123456789012345.6, 1e100, 5e-324]", "[0.1, 1.0e+16, 1.0e+15, 123456789012345.6, 1.0e+100, 5.0e-324]"},
    {"[5.9604644775390625e-08, 6.1299821634635554e+54]", "[5.960464477539063e-08, 6.129982163463556e+54]"},
    {"1e300", "1000000000000000052504760255204420248704468581108159154915854115511802457988908195786371375080447864043704443832883878176942523235360430575644792184786706982848387200926575803737830233794788090059368953234970799945081119038967640880074652742780142494579258788820056842838115669472196386865459400540160.000000"},
    {"\"a\\nb\"", "a\nb"},
    {"[\"a\\nb\", \"a\\u0001b\"]", "[\"a\\nb\", \"a\\u{1}b\"]"},
    {"[[[]], [{}]]", "[[[]], [{}]]"},
};

static void test_puppet_string(void **state)
{
    (void)state;
    int failures = 0;
    for (size_t i = 0; i < sizeof string_cases / sizeof *string_cases; i++) {
        hv *v = val(string_cases[i].value);
        sbuf b = {0};
        puppet_string(&b, v);
        if (strcmp(sb_str(&b), string_cases[i].expected) != 0) {
            print_error("String.new(%s)\n  expected: %s\n       got: %s\n", string_cases[i].value,
                        string_cases[i].expected, sb_str(&b));
            failures++;
        }
        sb_free(&b);
        hv_decref(v);
    }
    assert_int_equal(failures, 0);
}

/* Nesting limits give errors, never crashes; a parsed type is reusable. */
static void test_limits_and_reuse(void **state)
{
    (void)state;
    sbuf b = {0};
    for (int i = 0; i < 2000; i++)
        sb_adds(&b, "Array[");
    sb_adds(&b, "Integer");
    for (int i = 0; i < 2000; i++)
        sb_addc(&b, ']');
    herr e = {0};
    assert_null(ptype_parse(sb_str(&b), &e));
    assert_non_null(e.msg);
    herr_clear(&e);
    sb_free(&b);

    ptype *t = ptype_parse("Pattern[/^a+$/, 'b']", &e);
    assert_non_null(t);
    for (int i = 0; i < 100; i++) {
        hv *yes = hv_str("aaa"), *no = hv_str("ccc");
        assert_true(ptype_match(t, yes));
        assert_false(ptype_match(t, no));
        hv_decref(yes);
        hv_decref(no);
    }
    char *s = ptype_to_s(t);
    assert_string_equal(s, "Pattern[/^a+$/, /b/]");
    free(s);
    ptype_free(t);

    hv *deep = hv_int(1);
    for (int i = 0; i < 3000; i++) {
        hv *a = hv_array();
        hv_array_push(a, deep);
        deep = a;
    }
    t = ptype_parse("Array[Integer]", &e);
    assert_false(ptype_match(t, deep));
    char *m = ptype_mismatch(t, deep, "Found value");
    assert_string_equal(m, "Found value has wrong type, index 0 expects an Integer value, got Tuple");
    free(m);
    ptype_free(t);
    hv_decref(deep);
}

/* The built-in aliases (made from constructors in ptype.c) are what the parser makes of their
 * definitions in Puppet's StaticLoader. */
static void test_builtin_aliases_as_parsed(void **state)
{
    (void)state;
    static const struct {
        const char *name, *def;
    } rows[] = {
        {"Data", "Variant[ScalarData,Undef,Hash[String,Data],Array[Data]]"},
        {"RichDataKey", "Variant[String,Numeric]"},
        {"RichData", "Variant[Scalar,SemVerRange,Binary,Sensitive,Type,TypeSet,URI,Object,Undef,Default,"
                     "Hash[RichDataKey,RichData],Array[RichData]]"},
        {"Puppet::LookupKey", "RichDataKey"},
        {"Puppet::LookupValue", "RichData"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        const ptype *a = pt_builtin_alias(rows[i].name, strlen(rows[i].name));
        assert_non_null(a);
        assert_non_null(a->t);
        herr e = {0};
        ptype *t = pt_parse_type(rows[i].def, strlen(rows[i].def), false, NULL, 0, &e);
        assert_non_null(t);
        assert_true(pt_eq(a->t, t));
        char *want = pt_to_s(t), *got = pt_to_s(a->t);
        assert_string_equal(got, want);
        free(want);
        free(got);
        pt_unref(t);
    }
    assert_null(pt_builtin_alias("RichDat", 7));
    assert_ptr_equal(pt_builtin_alias("richdata", 8), pt_builtin_alias("RichData", 8));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_types_table),
        cmocka_unit_test(test_cli_parse),
        cmocka_unit_test(test_conformance_types_and_defaults),
        cmocka_unit_test(test_error_kinds),
        cmocka_unit_test(test_name_of_value),
        cmocka_unit_test(test_convert_table),
        cmocka_unit_test(test_convert_conformance),
        cmocka_unit_test(test_puppet_string),
        cmocka_unit_test(test_limits_and_reuse),
        cmocka_unit_test(test_builtin_aliases_as_parsed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
