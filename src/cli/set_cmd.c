/* set_cmd.c - `hiera set KEY VALUE` and `hiera unset KEY`: one key of one data file changed, every
 * other byte of the file kept (the library's editor, src/edit/), with what the change does shown
 * before it is written: the file's unified diff, the nodes whose answers change (hiera diff's fast
 * path over the facts folder or PuppetDB) and hiera check's new findings in the file
 * (edit_effects.c). The file is written atomically, keeping its mode and owner.
 *
 * Where: --file PATH, or --level NAME (the file the level resolves to for --node's facts, as
 * hiera lookup takes them; a level whose path interpolates nothing needs no node), in the
 * environment's layer (or the global one), or a module's with --module. The command line is read
 * as hiera lookup's (common.c): --environment, --codedir and every Puppet setting.
 *
 * Exit status: 0 written (or --dry-run, or nothing to change), 1 refused (the editor refused the
 * file, no level can read it, --check found a new error), 2 trouble (bad options, a file that
 * cannot be read or written, a fleet whose impact cannot be computed). */
#include "cli/set_cmd.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli/common.h"
#include "cli/edit_effects.h"
#include "cli/facts_opts.h"

typedef struct {
    const char *file, *level, *module, *format;
    bool json, encrypt, dry_run, check;
    cli_facts_args f;
} set_args;

static const cli_option SET_OPTIONS[] = {
    {"help", 'h', CLI_HELP, 0, NULL},
    {"version", 'V', CLI_VERSION, 0, NULL},
    {"file", 'f', CLI_VALUE, offsetof(set_args, file), NULL},
    {"level", 'l', CLI_VALUE, offsetof(set_args, level), NULL},
    {"module", 'm', CLI_VALUE, offsetof(set_args, module), NULL},
    {"json", 0, CLI_FLAG, offsetof(set_args, json), NULL},
    {"encrypt", 0, CLI_FLAG, offsetof(set_args, encrypt), NULL},
    {"dry-run", 'n', CLI_FLAG, offsetof(set_args, dry_run), NULL},
    {"check", 0, CLI_FLAG, offsetof(set_args, check), NULL},
    {"format", 0, CLI_VALUE, offsetof(set_args, format), NULL},
};

static const char *SET_USAGE =
    "usage: hiera set   [--file <FILE> | --level <LEVEL> [--node <NODE-NAME>] [--module <MODULE>]]\n"
    "                   [--json | --encrypt] [--dry-run] [--check] [--format text|json]\n"
    "                   [--facts-dir <DIR> | --from-puppetdb | --puppetdb <URL|FILE>] [--nodes-query <QUERY>]\n"
    "                   [--environment <ENV>] [--codedir <DIR>] [--<puppet setting> <VALUE>] <KEY> <VALUE>\n"
    "       hiera unset [the same] <KEY>\n"
    "\n"
    "Sets (or removes) one key in one YAML data file, changing only the bytes of that entry: every\n"
    "comment, blank line, key order, indentation, quote and line ending of the rest of the file stays\n"
    "as it was, and the edited scalar keeps its style when the new value allows it. A file that cannot\n"
    "be edited exactly is refused with its line and why, never rewritten: the key defined twice, an\n"
    "anchor or alias in the way, a flow mapping to edit inside, a merge key (<<), a document that is\n"
    "not a hash. Before writing, it prints the file's unified diff, then (with --facts-dir or PuppetDB)\n"
    "the nodes whose answers change, as hiera diff says it, then hiera check's new findings in the\n"
    "file. The file is written atomically (a temporary file in its folder, fsync, rename), keeping its\n"
    "mode and owner.\n"
    "\n"
    "  KEY                    a top-level key, or a dotted key into its hash (profile::users.bob.shell;\n"
    "                         '\"a.b\".c' for a key holding a dot): the hashes on the way are made\n"
    "  VALUE                  YAML: 8443, '\"8443\"' (a string), '[a, b]', '{uid: 1003}', '~'\n"
    "  --json                 VALUE is JSON\n"
    "  --encrypt              VALUE is plain text, written as an eyaml ENC[PKCS7,...] block encrypted\n"
    "                         with the public key of the level that reads the file (an eyaml level)\n"
    "  --file, -f FILE        the data file; one that does not exist is created (starting with ---)\n"
    "                         when a level of the environment can read it\n"
    "  --level, -l LEVEL      the file this hierarchy level resolves to for the node (a level with\n"
    "                         several paths: its first; glob and mapped_paths levels are refused), in\n"
    "                         the environment's hierarchy, else the global one\n"
    "  --module, -m MODULE    the module's hierarchy instead (its keys are MODULE::...)\n"
    "  --node NAME, --facts FILE, --trusted FILE   the node whose facts resolve the level's path, as\n"
    "                         hiera lookup takes them (needed when the path interpolates facts)\n"
    "  --dry-run, -n          show all of it, write nothing\n"
    "  --check                refuse to write (exit 1) when hiera check finds a new error in the file\n"
    "  --facts-dir DIR        the fleet: the nodes whose answers change (hiera diff's fast path);\n"
    "                         --trusted-dir DIR and --unsafe-fact-paths as hiera diff takes them\n"
    "  --format text|json     json: {\"file\", \"key\", \"action\", \"changed\", \"written\", \"dry_run\",\n"
    "                         \"digest_before\", \"digest_after\", \"diff\", \"old_value\", \"value\",\n"
    "                         \"impact\" (hiera diff's document), \"findings\", \"error\"}\n"
    "  --color auto|always|never   colour the text (default: on a terminal)\n"
    "\n"
    "--environment, --codedir, --confdir, --environmentpath, --hiera_config and any Puppet setting are\n"
    "read as hiera lookup reads them.\n"
    "Exit status: 0 written (or --dry-run, or nothing to change), 1 refused (the file cannot be edited\n"
    "exactly, no level reads it, --check found a new error), 2 trouble (bad options, a file that\n"
    "cannot be read or written, a fleet whose impact cannot be computed).\n"
    "\n"
    "The fleet may come from PuppetDB instead of --facts-dir:\n" CLI_PDB_USAGE;

static bool use_color(const cli_parsed *p)
{
    const char *given = NULL;
    for (size_t i = 0; i < p->nsettings; i++)
        if (!strcmp(p->settings[i].name, "color"))
            given = p->settings[i].value;
    if (given && (!strcmp(given, "always") || !strcmp(given, "true") || !strcmp(given, "ansi")))
        return true;
    if (given && (!strcmp(given, "never") || !strcmp(given, "false")))
        return false;
    return isatty(STDOUT_FILENO) && !getenv("NO_COLOR") && !(getenv("TERM") && !strcmp(getenv("TERM"), "dumb"));
}

static const char *str_of(const hiera_value *h, const char *key)
{
    const hiera_value *v = h ? hiera_value_hash_get(h, key) : NULL;
    return v && hiera_value_kind(v) == HIERA_STRING ? hiera_value_string(v) : NULL;
}

static bool bool_of(const hiera_value *h, const char *key)
{
    const hiera_value *v = h ? hiera_value_hash_get(h, key) : NULL;
    return v && hiera_value_kind(v) == HIERA_BOOLEAN && hiera_value_bool(v);
}

/* an absolute path for a given one (the folder resolved; the file itself may not exist) */
static char *absolute(const char *path)
{
    char *real = realpath(path, NULL);
    if (real)
        return real;
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, (size_t)(slash - path)) : strdup(".");
    if (!dir || !*dir) {
        free(dir);
        dir = strdup("/");
    }
    char *rdir = dir ? realpath(dir, NULL) : NULL;
    char *out = NULL;
    if (rdir) {
        if (asprintf(&out, "%s/%s", strcmp(rdir, "/") ? rdir : "", slash ? slash + 1 : path) < 0)
            out = NULL;
    } else if (path[0] == '/') {
        out = strdup(path);
    } else {
        char cwd[PATH_MAX];
        if (getcwd(cwd, sizeof cwd) && asprintf(&out, "%s/%s", cwd, path) < 0)
            out = NULL;
    }
    free(dir);
    free(rdir);
    return out;
}

/* the diff, coloured as git colours it */
static void print_diff(FILE *out, const char *diff, bool color)
{
    for (const char *l = diff; *l;) {
        const char *e = strchr(l, '\n');
        size_t n = e ? (size_t)(e - l) : strlen(l);
        const char *c = !color ? NULL : !strncmp(l, "---", 3) || !strncmp(l, "+++", 3) ? "\033[1m"
                                      : l[0] == '@' ? "\033[36m" : l[0] == '-' ? "\033[31m" : l[0] == '+' ? "\033[32m" : NULL;
        fprintf(out, "%s%.*s%s\n", c ? c : "", (int)n, l, c ? "\033[0m" : "");
        l += n + (e ? 1 : 0);
    }
}

static void json_add(hiera_value *doc, const char *key, hiera_value *v) { hiera_value_hash_set(doc, key, v); }

static hiera_value *str_or_null(const char *s) { return s ? hiera_value_new_string(s) : hiera_value_undef(); }

/* The arguments that give hiera diff the fleet (the same nodes as this command was given). */
static const char **fleet_args(const set_args *a, const cli_parsed *p, size_t *n, char **owned)
{
    const char **v = calloc(32 + p->nsettings, sizeof *v);
    *n = 0;
    if (!v)
        return NULL;
    if (a->f.facts_dir) {
        v[(*n)++] = "--facts-dir";
        v[(*n)++] = owned[0] = absolute(a->f.facts_dir);
    } else if (cli_pdb_wanted(&a->f.pdb)) {
        if (a->f.pdb.from_puppetdb)
            v[(*n)++] = "--from-puppetdb";
        const struct {
            const char *flag, *value;
        } pv[] = {{"--puppetdb", a->f.pdb.puppetdb}, {"--nodes-query", a->f.pdb.nodes_query}, {"--cert", a->f.pdb.cert},
                  {"--key", a->f.pdb.key},           {"--cacert", a->f.pdb.cacert},           {"--puppetdb-timeout", a->f.pdb.timeout}};
        for (size_t i = 0; i < sizeof pv / sizeof *pv; i++)
            if (pv[i].value) {
                v[(*n)++] = pv[i].flag;
                v[(*n)++] = pv[i].value;
            }
        if (a->f.pdb.include_inactive)
            v[(*n)++] = "--include-inactive";
        /* Puppet's settings its client reads */
        static const char *const pdb_settings[] = {"certname", "ssldir", "hostcert", "hostprivkey", "localcacert",
                                                   "hostcrl", "certificate_revocation"};
        size_t k = 1;
        for (size_t i = 0; i < p->nsettings && k < 30; i++)
            for (size_t j = 0; j < sizeof pdb_settings / sizeof *pdb_settings; j++)
                if (!strcmp(p->settings[i].name, pdb_settings[j]) && asprintf(&owned[k], "--%s=%s", pdb_settings[j], p->settings[i].value) >= 0)
                    v[(*n)++] = owned[k++];
    } else {
        return v;
    }
    if (a->f.trusted_dir) {
        v[(*n)++] = "--trusted-dir";
        v[(*n)++] = a->f.trusted_dir;
    }
    if (a->f.unsafe_fact_paths)
        v[(*n)++] = "--unsafe-fact-paths";
    return v;
}

int set_main(int argc, char **argv, bool unset)
{
    const char *cmd = unset ? "hiera unset" : "hiera set";
    set_args a = {0};
    cli_parsed p;
    int rc = 2;
    hiera_settings *settings = NULL;
    hiera_environment *env = NULL;
    hiera_node_facts nf = {0};
    hiera_value *trusted = NULL, *target = NULL, *levels = NULL, *value = NULL, *doc = NULL;
    hiera *h = NULL;
    hiera_cache *cache = NULL;
    hiera_error err = {0};
    char *path = NULL, *text = NULL, *diff = NULL, *before = NULL, *after = NULL;
    char *codedir = NULL, *envpath = NULL, *confdir = NULL, *hiera_config = NULL;
    char *owned[32] = {0};
    const char **fleet = NULL;
    size_t text_len = 0, nfleet = 0;
    hiera_edit_result res = {0};
    effects fx = {0};
    const char *error_text = NULL;
    char *error_owned = NULL;

    if (cli_parse(cmd, argc, argv, SET_OPTIONS, sizeof SET_OPTIONS / sizeof *SET_OPTIONS,
                  &CLI_FACTS_FLEET, offsetof(set_args, f), &a, SET_USAGE, &p)) {
        cli_parsed_free(&p);
        return 2;
    }
    bool json_out = a.format && !strcasecmp(a.format, "json");
    bool color = !json_out && use_color(&p);
    if (a.format && !json_out && strcasecmp(a.format, "text")) {
        fprintf(stderr, "Error: %s: --format takes text or json, not '%s'\n", cmd, a.format);
        goto out;
    }
    if (p.nargs != (unset ? 1u : 2u)) {
        fprintf(stderr, "Error: %s: give %s\nRun '%s --help' for the options.\n", cmd,
                unset ? "the key to remove: hiera unset KEY" : "the key and its value: hiera set KEY VALUE", cmd);
        goto out;
    }
    const char *key = p.args[0], *value_text = unset ? NULL : p.args[1];
    if (!a.file == !a.level) {
        fprintf(stderr, "Error: %s: give the file (--file FILE) or the level whose file it is (--level LEVEL), not %s\n",
                cmd, a.file ? "both" : "neither");
        goto out;
    }
    if ((a.json || a.encrypt) && unset) {
        fprintf(stderr, "Error: %s: --json and --encrypt go with hiera set\n", cmd);
        goto out;
    }
    if (a.json && a.encrypt) {
        fprintf(stderr, "Error: %s: --encrypt takes the value as plain text: not with --json\n", cmd);
        goto out;
    }
    if (a.f.facts_dir && cli_pdb_wanted(&a.f.pdb)) {
        fprintf(stderr, "Error: %s: give the fleet as --facts-dir or PuppetDB, not both\n", cmd);
        goto out;
    }
    if (cli_refuse_settings(cmd, &p))
        goto out;
    settings = cli_settings(&p);
    if (!settings)
        goto out;
    env = cli_environment(settings);
    if (!env)
        goto out;

    /* the node (only to resolve a level's path: its facts as hiera lookup takes them) */
    if (a.f.node || a.f.facts) {
        cli_pdb_args none = {0};
        if (cli_node_facts(settings, env, a.f.node, a.f.facts, a.f.node ? &a.f.pdb : &none, NULL, &nf))
            goto out;
    }
    if (a.f.trusted && !(trusted = cli_load_trusted(a.f.trusted)))
        goto out;
    cache = cli_cache();
    hiera_options o = {.size = sizeof o, .node = nf.node, .facts = nf.given, .base_facts = nf.base, .cache = cache,
                       .trusted = trusted, .unsafe_fact_paths = a.f.unsafe_fact_paths,
                       .diagnostics = cli_print_diagnostic, .settings = settings, .env = env};
    h = hiera_new(&o, &err);
    if (!h) {
        fprintf(stderr, "Error: %s: %s\n", cmd, err.message ? err.message : "");
        goto out;
    }

    /* the file */
    if (a.level) {
        target = hiera_edit_target(h, a.module, a.level, &err);
        if (!target) {
            bool hint = !nf.node && !a.f.facts && err.message && strstr(err.message, "variable");
            fprintf(stderr, "Error: %s: %s%s%s%s\n", cmd, err.file ? err.file : "", err.file ? ": " : "",
                    err.message ? err.message : "", hint ? " (give the node whose file it is: --node NAME)" : "");
            rc = 1;
            goto out;
        }
        if (bool_of(target, "node_variables") && !nf.node && !a.f.facts) {
            fprintf(stderr, "Error: %s: level '%s' names its file with variables (%s): give the node (--node NAME) whose "
                            "file it is\n", cmd, a.level, str_of(target, "template"));
            rc = 1;
            goto out;
        }
        path = strdup(str_of(target, "path"));
    } else {
        path = absolute(a.file);
        if (!path) {
            fprintf(stderr, "Error: %s: %s: %s\n", cmd, a.file, strerror(errno));
            goto out;
        }
    }
    levels = hiera_edit_file_levels(h, path);
    if (!target && hiera_value_array_size(levels))
        target = hiera_value_incref(hiera_value_array_get(levels, 0));
    hiera_status rs = hiera_file_read_text(path, &text, &text_len, &err);
    if (rs == HIERA_ERROR) {
        fprintf(stderr, "Error: %s: %s\n", cmd, err.message ? err.message : "");
        goto out;
    }
    bool is_new = rs == HIERA_NOT_FOUND;
    if (is_new && !target) {
        fprintf(stderr, "Error: %s: %s does not exist, and no level of environment %s can read it: hiera would never "
                        "read it\n", cmd, path, hiera_environment_name(env));
        rc = 1;
        goto out;
    }
    if (is_new && unset) {
        fprintf(stderr, "%s: %s does not exist: nothing to remove\n", cmd, path);
        rc = 0;
        goto out;
    }
    /* a module's data answers only for its own keys */
    const char *module = str_of(target, "module");
    if (module && target && !strcmp(str_of(target, "layer"), "module")) {
        size_t ml = strlen(module);
        if (strncmp(key, module, ml) != 0 || strncmp(key + ml, "::", 2) != 0) {
            fprintf(stderr, "Error: %s: %s is module %s's data: Puppet reads only keys of its namespace (%s::...) there, "
                            "not '%s'\n", cmd, path, module, module, key);
            rc = 1;
            goto out;
        }
    }

    /* the value */
    bool encrypted = false;
    if (a.encrypt) {
        const hiera_value *eyaml = target ? hiera_value_hash_get(target, "eyaml") : NULL;
        if (!eyaml) {
            fprintf(stderr, "Error: %s: --encrypt needs an eyaml level (lookup_key: eyaml_lookup_key); %s is read by %s\n",
                    cmd, path, target ? str_of(target, "function") : "no level");
            rc = 1;
            goto out;
        }
        char *block = hiera_eyaml_encrypt(value_text, strlen(value_text), eyaml, &err);
        if (!block) {
            fprintf(stderr, "Error: %s: cannot encrypt the value for level '%s': %s\n", cmd, str_of(target, "level"),
                    err.message ? err.message : "");
            goto out;
        }
        value = hiera_value_new_string(block);
        free(block);
        encrypted = true;
    } else if (value_text) {
        value = a.json ? hiera_value_from_json(value_text, &err) : hiera_value_from_yaml(value_text, strlen(value_text), &err);
        if (!value) {
            fprintf(stderr, "Error: %s: the value is not %s: %s\n", cmd, a.json ? "JSON" : "YAML", err.message ? err.message : "");
            goto out;
        }
    }

    /* the edit */
    hiera_edit ed = HIERA_EDIT_INIT;
    ed.file = path;
    ed.key = key;
    ed.value = value;
    ed.new_file = is_new;
    hiera_status es = hiera_edit_text(text, text_len, &ed, &res, &err);
    before = is_new ? strdup("") : hiera_text_digest(text, text_len);
    doc = hiera_value_new_hash();
    json_add(doc, "file", hiera_value_new_string(path));
    json_add(doc, "key", hiera_value_new_string(key));
    json_add(doc, "action", hiera_value_new_string(unset ? "unset" : "set"));
    json_add(doc, "level", target ? str_or_null(str_of(target, "level")) : hiera_value_undef());
    json_add(doc, "dry_run", hiera_value_new_bool(a.dry_run));
    json_add(doc, "digest_before", is_new ? hiera_value_undef() : hiera_value_new_string(before));
    if (es == HIERA_ERROR) {
        if (err.kind == HIERA_ERR_REFUSED) {
            char line[32] = "";
            if (err.line)
                snprintf(line, sizeof line, ":%d", err.line);
            if (asprintf(&error_owned, "%s%s: cannot %s '%s': %s", err.file ? err.file : path, line, unset ? "remove" : "set",
                         key, err.message ? err.message : "") < 0)
                error_owned = NULL;
            error_text = error_owned ? error_owned : "the edit was refused";
            json_add(doc, "line", hiera_value_new_int(err.line));
            rc = 1;
        } else {
            error_text = err.message ? err.message : "the edit failed";
        }
        goto report;
    }
    if (es == HIERA_NOT_FOUND) {
        json_add(doc, "changed", hiera_value_new_bool(false));
        json_add(doc, "written", hiera_value_new_bool(false));
        if (!json_out)
            fprintf(stderr, "%s: '%s' is not set in %s: nothing to remove\n", cmd, key, path);
        rc = 0;
        goto report;
    }
    json_add(doc, "changed", hiera_value_new_bool(res.changed));
    if (res.old_value && !encrypted)
        json_add(doc, "old_value", hiera_value_incref(res.old_value));
    if (value && !encrypted)
        json_add(doc, "value", hiera_value_incref(value));
    if (!res.changed) {
        json_add(doc, "written", hiera_value_new_bool(false));
        json_add(doc, "diff", hiera_value_new_string(""));
        if (!json_out)
            fprintf(stderr, "%s: '%s' already has this value in %s: nothing to write\n", cmd, key, path);
        rc = 0;
        goto report;
    }
    after = hiera_text_digest(res.text, res.len);
    json_add(doc, "digest_after", hiera_value_new_string(after));
    diff = hiera_text_diff(text, text_len, res.text, res.len, is_new ? "/dev/null" : path, path);
    json_add(doc, "diff", hiera_value_new_string(diff));
    if (!json_out)
        print_diff(stdout, diff, color);

    /* what it does */
    codedir = hiera_settings_get(settings, "codedir", NULL);
    envpath = hiera_settings_get(settings, "environmentpath", NULL);
    confdir = hiera_settings_get(settings, "confdir", NULL);
    hiera_config = hiera_settings_get(settings, "hiera_config", NULL);
    if (hiera_config && codedir) {
        size_t cl = strlen(codedir);
        if (!strncmp(hiera_config, codedir, cl) && !strcmp(hiera_config + cl, "/hiera.yaml")) {
            free(hiera_config);
            hiera_config = NULL; /* (each tree's own) */
        }
    }
    fleet = fleet_args(&a, &p, &nfleet, owned);
    effects_request er = {.file = path, .new_text = res.text, .new_len = res.len, .codedir = codedir,
                          .environmentpath = envpath, .environment = hiera_environment_name(env),
                          .env_dir = hiera_environment_dir(env), .confdir = confdir, .hiera_config = hiera_config,
                          .node_args = fleet, .nnode_args = nfleet, .facts_dir = owned[0], .impact_json = json_out,
                          .color = color, .redact = encrypted, .check = true};
    edit_effects(&er, &fx);
    if (fx.impact_status >= 0) {
        if (json_out) {
            hiera_value *im = hiera_value_from_json(fx.impact, NULL);
            json_add(doc, "impact", im ? im : hiera_value_undef());
        } else {
            fputs("\n", stdout);
            fputs(fx.impact, stdout);
        }
        if (fx.impact_errors && !json_out)
            fputs(fx.impact_errors, stderr);
    } else {
        json_add(doc, "impact", hiera_value_undef());
    }
    if (fx.impact_note) {
        json_add(doc, "impact_note", hiera_value_new_string(fx.impact_note));
        if (!json_out)
            fprintf(stderr, "%s: %s\n", cmd, fx.impact_note);
    }
    json_add(doc, "findings", fx.findings ? hiera_value_incref(fx.findings) : hiera_value_new_array());
    if (fx.check_note) {
        json_add(doc, "check_note", hiera_value_new_string(fx.check_note));
        if (!json_out)
            fprintf(stderr, "%s: %s\n", cmd, fx.check_note);
    }
    if (!json_out && hiera_value_array_size(fx.findings)) {
        printf("\n%s%zu new finding%s of hiera check in %s:%s\n", color ? "\033[1m" : "", hiera_value_array_size(fx.findings),
               hiera_value_array_size(fx.findings) == 1 ? "" : "s", path, color ? "\033[0m" : "");
        for (size_t i = 0; i < hiera_value_array_size(fx.findings); i++) {
            const hiera_value *f = hiera_value_array_get(fx.findings, i);
            bool error = !strcmp(str_of(f, "severity"), "error");
            printf("%s:%lld:%lld: %s%s%s: %s [%s]\n", path, (long long)hiera_value_int(hiera_value_hash_get(f, "line")),
                   (long long)hiera_value_int(hiera_value_hash_get(f, "column")), color ? (error ? "\033[31m" : "\033[33m") : "",
                   str_of(f, "severity"), color ? "\033[0m" : "", str_of(f, "message"), str_of(f, "rule"));
        }
    }
    if (fx.impact_status < 0 && nfleet && !fx.impact_note) {
        error_text = "the fleet's impact could not be computed";
        goto report;
    }
    if (fx.impact_note && nfleet) {
        error_text = "the fleet's impact could not be computed: nothing written";
        goto report;
    }
    if (a.check && fx.new_errors) {
        error_owned = NULL;
        if (asprintf(&error_owned, "hiera check finds %zu new error%s in %s (--check): nothing written", fx.new_errors,
                     fx.new_errors == 1 ? "" : "s", path) < 0)
            error_owned = NULL;
        error_text = error_owned ? error_owned : "hiera check finds a new error (--check): nothing written";
        rc = 1;
        goto report;
    }
    if (a.dry_run) {
        json_add(doc, "written", hiera_value_new_bool(false));
        if (!json_out)
            fprintf(stderr, "%s: dry run: %s not written\n", cmd, path);
        rc = 0;
        goto report;
    }
    hiera_error werr = {0};
    if (hiera_file_replace(path, res.text, res.len, before, &werr) != HIERA_OK) {
        json_add(doc, "written", hiera_value_new_bool(false));
        error_owned = strdup(werr.message ? werr.message : "cannot write the file");
        error_text = error_owned;
        hiera_error_clear(&werr);
        goto report;
    }
    json_add(doc, "written", hiera_value_new_bool(true));
    if (!json_out)
        fprintf(stderr, "%s: wrote %s\n", cmd, path);
    rc = 0;

report:
    if (error_text) {
        json_add(doc, "error", hiera_value_new_string(error_text));
        if (!hiera_value_hash_get(doc, "written"))
            json_add(doc, "written", hiera_value_new_bool(false));
        if (!json_out)
            fprintf(stderr, "Error: %s: %s\n", cmd, error_text);
    }
    if (json_out) {
        char *j = hiera_render(doc, HIERA_RENDER_JSON, NULL);
        if (j)
            puts(j);
        free(j);
    }
out:
    effects_free(&fx);
    hiera_edit_result_clear(&res);
    for (size_t i = 0; i < 32; i++)
        free(owned[i]);
    free(fleet);
    free(error_owned);
    free(path);
    free(text);
    free(diff);
    free(before);
    free(after);
    free(codedir);
    free(envpath);
    free(confdir);
    free(hiera_config);
    hiera_value_decref(doc);
    hiera_value_decref(value);
    hiera_value_decref(target);
    hiera_value_decref(levels);
    hiera_value_decref(trusted);
    hiera_node_facts_clear(&nf);
    hiera_free(h);
    cli_cache_release(cache);
    hiera_error_clear(&err);
    hiera_environment_free(env);
    hiera_settings_free(settings);
    cli_parsed_free(&p);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "Error: %s: cannot write the output: %s\n", cmd, strerror(errno));
        rc = 2;
    }
    return rc;
}
