/* Unit tests for the JSON reader (src/formats/json.c): what Ruby 3.1's JSON.parse (json 2.6.1, which
 * Puppet's json_data calls) gives for each input, recorded from Ruby: the value, or the parser's
 * message (the line of parser.rl that raised and the source from where its machine stopped). */
#include "testutil.h"

static const struct {
    const char *src;
    size_t len;
    const char *expected; /* "OK " and hjson_debug of the value, or Ruby's message */
} rows[] = {
    {"", 0, "859: unexpected token at ''"},
    {"  \n\011 ", 5, "859: unexpected token at ''"},
    {"/* only a comment */", 20, "859: unexpected token at ''"},
    {"{\"a\": 1,", 8, "859: unexpected token at '{\"a\": 1,'"},
    {"{\"a\": \"unterminated", 19, "859: unexpected token at '{\"a\": \"unterminated'"},
    {"{\n  \"a\": 1,\n}\n", 14, "859: unexpected token at '{\n  \"a\": 1,\n}\n'"},
    {"{\"a\": [1, 2,]}", 14, "451: unexpected token at ']}'"},
    {"[1,]", 4, "451: unexpected token at ']'"},
    {"[1 2]", 5, "451: unexpected token at '2]'"},
    {"[,]", 3, "451: unexpected token at ',]'"},
    {"{\"a\" 1}", 7, "859: unexpected token at '{\"a\" 1}'"},
    {"{\"a\": 1 \"b\": 2}", 15, "859: unexpected token at '{\"a\": 1 \"b\": 2}'"},
    {"{'a': 1}", 8, "859: unexpected token at '{'a': 1}'"},
    {"{a: 1}", 6, "859: unexpected token at '{a: 1}'"},
    {"{,}", 3, "859: unexpected token at '{,}'"},
    {"[NaN]", 5, "225: unexpected token at 'NaN]'"},
    {"NaN", 3, "225: unexpected token at 'NaN'"},
    {"[Infinity]", 10, "232: unexpected token at '[Infinity]'"},
    {"Infinity", 8, "232: unexpected token at ''"},
    {"{\"a\": -Infinity}", 16, "249: unexpected token at '-Infinity}'"},
    {"[-Infin]", 8, "451: unexpected token at '-Infin]'"},
    {"[007]", 5, "451: unexpected token at '007]'"},
    {"[1.]", 4, "451: unexpected token at '.]'"},
    {"[1.5e]", 6, "451: unexpected token at '.5e]'"},
    {"[1.5.3]", 7, "451: unexpected token at '.5.3]'"},
    {"[12-3]", 6, "451: unexpected token at '-3]'"},
    {"[-]", 3, "451: unexpected token at '-]'"},
    {"[tru]", 5, "451: unexpected token at 'tru]'"},
    {"nul", 3, "859: unexpected token at 'nul'"},
    {"[truex]", 7, "451: unexpected token at 'x]'"},
    {"{\"a\": 1}{\"b\": 2}", 16, "859: unexpected token at '{\"b\": 2}'"},
    {"[1]]", 4, "859: unexpected token at ']'"},
    {"[\"tab\011here\"]", 12, "451: unexpected token at '\"tab\011here\"]'"},
    {"[\"\\u12g4\"]", 10, "451: unexpected token at '\"\\u12g4\"]'"},
    {"[\"ab\\ud800\"]", 12, "521: incomplete surrogate pair at 'ab\\ud800\"]'"},
    {"{\"\\ud800\": 1}", 13, "521: incomplete surrogate pair at '\\ud800\": 1}'"},
    {"[1] /* open", 11, "859: unexpected token at ''"},
    {"[1] // no newline", 17, "859: unexpected token at ''"},
    {"[1] / x", 7, "859: unexpected token at ' x'"},
    {"/", 1, "859: unexpected token at ''"},
    {"\357\273\277[1]", 6, "859: unexpected token at '\357\273\277[1]'"},
    {"[1] \000 x", 7, "859: unexpected token at ''"},
    {"[\"a\000b\"]", 7, "451: unexpected token at '\"a'"},
    {"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]", 202, "nesting of 101 is too deep"},
    {"[{\"a\": 1,}]", 11, "451: unexpected token at '{\"a\": 1,}]'"},
    {"{\"a\": [1,,2]}", 13, "451: unexpected token at ',2]}'"},
    {"[[1,]]", 6, "451: unexpected token at ']]'"},
    {"{\"k\": \"\303\251\", \"j\": \303\274}", 20, "859: unexpected token at '{\"k\": \"\303\251\", \"j\": \303\274}'"},
    {"/* c */ {\"a\" /* x */ : // y\n [1, /**/ 2]} // end\n", 49, "OK {\"a\":[1,2]}"},
    {"[\"\\/\", \"\\q\", \"\\u00e9\", \"\\ud83d\\ude00\", \"\\ud800abcdefg\", \"a\\ud800\\u0041x\", \"\\u0000x\", \"\\udc00\"]", 94, "OK [\"/\",\"q\",\"\303\251\",\"\360\237\230\200\",\"?bcdefg\",\"a\360\220\201\201x\",\"\\u0000x\",\"\355\260\200\"]"},
    {"[\"\377\376\"]", 6, "OK [\"\377\376\"]"},
    {"[0, -0, -0.0, 1e5, 1E+2, 2.5e-3, 12345678901234567890123, -9223372036854775808, 9223372036854775808, -9223372036854775809, 1e-400, 1e400, -1e400]", 145, "OK [0,0,-0,100000,100,0.0025000000000000001,12345678901234567890123,-9223372036854775808,9223372036854775808,-9223372036854775809,0,inf,-inf]"},
    {"{\"a\": 1, \"b\": 2, \"a\": 3}", 24, "OK {\"a\":3,\"b\":2}"},
    {"{\"\": 1}", 7, "OK {\"\":1}"},
    {"\"top\"", 5, "OK \"top\""},
    {"null", 4, "OK null"},
    {"  false  ", 9, "OK false"},
    {"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]", 200, "OK [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"},
};

static void test_ruby_json_parse(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        herr e = {0};
        hv *v = hjson_parse(rows[i].src, rows[i].len, "<t>", &e);
        char *got;
        if (v) {
            char *d = hjson_debug(v);
            got = xasprintf("OK %s", d);
            free(d);
        } else {
            const char *prefix = "Unable to parse (<t>): ";
            assert_non_null(e.msg);
            assert_true(strncmp(e.msg, prefix, strlen(prefix)) == 0);
            got = xstrdup(e.msg + strlen(prefix));
        }
        if (strcmp(got, rows[i].expected) != 0)
            print_error("row %zu: expected %s\n        got %s\n", i, rows[i].expected, got);
        assert_string_equal(got, rows[i].expected);
        free(got);
        hv_decref(v);
        herr_clear(&e);
    }
}

/* max_nesting 100: the 101st array or object raises where it opens, before any later error */
static void test_nesting(void **state)
{
    (void)state;
    sbuf b = {0};
    for (int depth = 99; depth <= 102; depth++) {
        for (int object = 0; object < 2; object++) {
            b.len = 0;
            for (int i = 0; i < depth; i++)
                sb_adds(&b, object ? "{\"a\":" : "[");
            sb_adds(&b, object ? "1" : "");
            for (int i = 0; i < depth; i++)
                sb_adds(&b, object ? "}" : "]");
            sb_adds(&b, " x"); /* a later error */
            herr e = {0};
            assert_null(hjson_parse(b.s, b.len, "<t>", &e));
            assert_string_equal(e.msg, depth > 100 ? "Unable to parse (<t>): nesting of 101 is too deep"
                                                   : "Unable to parse (<t>): 859: unexpected token at 'x'");
            herr_clear(&e);
        }
    }
    sb_free(&b);
}

/* every node has its 1-based start line, keys too; an error has the line and column where the
 * machine stopped */
static void test_lines(void **state)
{
    (void)state;
    const char *src = "{\n  \"a\":\n    [1,\n     {\"b\": true}],\n  /* c\n */ \"c\": \"x\"\n}\n";
    herr e = {0};
    hv *v = hjson_parse(src, strlen(src), "<t>", &e);
    assert_non_null(v);
    assert_int_equal(hv_line(v), 1);
    assert_int_equal(hv_line(hv_hash_key_at(v, 0)), 2);
    hv *a = hv_hash_gets(v, "a");
    assert_int_equal(hv_line(a), 3);
    assert_int_equal(hv_line(hv_array_get(a, 0)), 3);
    hv *inner = hv_array_get(a, 1);
    assert_int_equal(hv_line(inner), 4);
    assert_int_equal(hv_line(hv_hash_key_at(inner, 0)), 4);
    assert_int_equal(hv_line(hv_hash_key_at(v, 1)), 6);
    assert_int_equal(hv_line(hv_hash_gets(v, "c")), 6);
    hv_decref(v);
    const char *bad = "{\n  \"a\": [1,\n    2,]\n}";
    assert_null(hjson_parse(bad, strlen(bad), "f.json", &e));
    assert_string_equal(e.msg, "Unable to parse (f.json): 451: unexpected token at ']\n}'");
    assert_string_equal(e.file, "f.json");
    assert_int_equal(e.line, 3);
    assert_int_equal(e.col, 7);
    herr_clear(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ruby_json_parse),
        cmocka_unit_test(test_nesting),
        cmocka_unit_test(test_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
