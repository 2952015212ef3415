/* puppet8.c - what Puppet 8's defaults refuse that Puppet 7's let through (`strict` is error, not
 * warning, and the agents send no legacy facts: include_legacy_facts is false), as findings of
 * their own rules. Their severity follows what the environment's lookups do (ck_env's puppet8 and
 * strict: the Puppet answered as, and the strict setting of its puppet.conf, else the version's
 * default): an error where the lookups fail, a warning where they work today and break on the
 * upgrade or under strict = error.
 *   puppet8-undefined-variable  data that interpolates a top-scope variable Puppet 8 leaves
 *                               undefined, a legacy fact (%{osfamily}, %{::hostname}): the lookup
 *                               fails ("Undefined variable 'osfamily'") as Puppet 8 with strict =
 *                               error; a version 5 hierarchy path that does gets "" instead (a
 *                               warning either way), while a level's datadir or options, which
 *                               Puppet interpolates without the paths' shield, fail every lookup
 *                               through the hiera.yaml as data does
 *   puppet8-not-a-hash          a YAML data file whose document is a list or a scalar: the lookups
 *                               that read it fail under strict = error ("file does not contain a
 *                               valid yaml hash")
 *   puppet8-v3-config           a version 3 hiera.yaml in an environment or a module: every lookup
 *                               there fails under strict = error ("hiera.yaml version 3 cannot be
 *                               used in ...")
 *   puppet8-v4-path-variable    a version 4 hiera.yaml whose hierarchy interpolates a legacy fact:
 *                               every lookup through it fails as Puppet 8 with strict = error
 * Variables other than legacy facts (custom facts, node-classifier parameters) cannot be judged
 * without the nodes' facts: with --facts-dir the lookups themselves fail (lookup-error). */
#include "check/ck_int.h"

#include "base/diag.h"
#include "engine/installed.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Facter 4.10's legacy facts on Linux (Facter::FactLoader's facts of type :legacy), which
 * Puppet 8's agents and `puppet lookup` leave out; ".*" stands for any text (an interface...). */
static const char *const LEGACY[] = {
    "architecture", "augeasversion", "bios_release_date", "bios_vendor", "bios_version", "blockdevice_.*_model",
    "blockdevice_.*_size", "blockdevice_.*_vendor", "blockdevices", "boardassettag", "boardmanufacturer",
    "boardproductname", "boardserialnumber", "chassisassettag", "chassistype", "dhcp_servers", "domain", "fqdn", "gid",
    "hardwareisa", "hardwaremodel", "hostname", "id", "interfaces", "ipaddress", "ipaddress6", "ipaddress6_.*",
    "ipaddress_.*", "lsbdistcodename", "lsbdistdescription", "lsbdistid", "lsbdistrelease", "lsbmajdistrelease",
    "lsbminordistrelease", "lsbrelease", "macaddress", "macaddress_.*", "manufacturer", "memoryfree", "memoryfree_mb",
    "memorysize", "memorysize_mb", "mtu_.*", "netmask", "netmask6", "netmask6_.*", "netmask_.*", "network", "network6",
    "network6_.*", "network_.*", "operatingsystem", "operatingsystemmajrelease", "operatingsystemrelease", "osfamily",
    "physicalprocessorcount", "processor.*", "processorcount", "productname", "productversion", "rubyplatform",
    "rubysitedir", "rubyversion", "scope6", "scope6_.*", "selinux", "selinux_config_mode", "selinux_config_policy",
    "selinux_current_mode", "selinux_enforced", "selinux_policyversion", "serialnumber", "ssh.*key", "sshfp_.*",
    "swapfree", "swapfree_mb", "swapsize", "swapsize_mb", "uptime", "uptime_days", "uptime_hours", "uptime_seconds",
    "uuid", "xendomains", NULL};

/* Whether name is a legacy fact (a pattern's ".*" matching one or more characters). */
static bool legacy_fact(const char *name)
{
    for (size_t i = 0; LEGACY[i]; i++) {
        const char *pat = LEGACY[i], *star = strstr(pat, ".*");
        if (!star) {
            if (!strcmp(pat, name))
                return true;
            continue;
        }
        size_t pre = (size_t)(star - pat), post = strlen(star + 2), n = strlen(name);
        if (n > pre + post && !strncmp(name, pat, pre) && !strcmp(name + n - post, star + 2))
            return true;
    }
    return false;
}

/* The replacement to suggest for a legacy fact */
static const char *structured(const char *name)
{
    static const struct {
        const char *legacy, *now;
    } map[] = {{"osfamily", "facts.os.family"},
               {"operatingsystem", "facts.os.name"},
               {"operatingsystemrelease", "facts.os.release.full"},
               {"operatingsystemmajrelease", "facts.os.release.major"},
               {"architecture", "facts.os.architecture"},
               {"hostname", "facts.networking.hostname"},
               {"domain", "facts.networking.domain"},
               {"fqdn", "facts.networking.fqdn"},
               {"ipaddress", "facts.networking.ip"},
               {"ipaddress6", "facts.networking.ip6"},
               {"macaddress", "facts.networking.mac"},
               {"lsbdistcodename", "facts.os.distro.codename"},
               {"lsbdistid", "facts.os.distro.id"},
               {"lsbdistrelease", "facts.os.distro.release.full"},
               {"processorcount", "facts.processors.count"},
               {"memorysize", "facts.memory.system.total"},
               {"uuid", "facts.dmi.product.uuid"},
               {"serialnumber", "facts.dmi.product.serial_number"},
               {NULL, NULL}};
    for (size_t i = 0; map[i].legacy; i++)
        if (!strcmp(map[i].legacy, name))
            return map[i].now;
    return NULL;
}

/* The root variable a variable expression reads at top scope (NULL: facts.x, trusted.x and the
 * like, which are hashes Puppet always sets). */
static const char *top_variable(const ck_var *v)
{
    const hv *r = hv_array_get(v->segs, 0);
    if (!hv_is(r, HV_STRING))
        return NULL;
    const char *root = hv_str_ptr(r);
    if (!strncmp(root, "::", 2))
        root += 2;
    return strstr(root, "::") ? NULL : root;
}

/* strict = X as the environment has it: "strict = error, its default" (Puppet 8's default) or
 * "strict = warning, as puppet.conf sets it" */
static void strict_words(const ck_env *e, char *buf, size_t n)
{
    static const char *const names[] = {"off", "warning", "error"};
    int s = e->strict < 0 || e->strict > 2 ? 1 : e->strict;
    snprintf(buf, n, "strict = %s, %s", names[s], s == (e->puppet8 ? 2 : 1) ? "its default" : "as puppet.conf sets it");
}

bool ck_strict_error(const ck_env *e)
{
    return e->strict == 2;
}

static void undefined_variables(ck_ctx *c)
{
    ck_env *e = c->env;
    /* a legacy fact is undefined as Puppet 8 only; the lookup fails only under strict = error */
    bool fails = e->puppet8 && e->strict == 2;
    int sev = fails ? CHECK_ERROR : CHECK_WARNING;
    char setting[64];
    strict_words(e, setting, sizeof setting);
    for (size_t i = 0; i < e->nvars; i++) {
        const ck_var *v = &e->vars[i];
        const char *name = top_variable(v);
        if (!name || !legacy_fact(name))
            continue;
        /* Puppet's messages name the variable as written: '::hostname' for %{::hostname} */
        const char *written = hv_str_ptr(hv_array_get(v->segs, 0));
        const char *now = structured(name);
        char hint[128] = "";
        if (now)
            snprintf(hint, sizeof hint, " (%%{%s} gives it)", now);
        if (v->file != UINT32_MAX) {
            if (!e->puppet8 || fails)
                ck_add(c, "puppet8-undefined-variable", sev, e->files[v->file].path, v->line, v->col,
                       "%%{%s}: '%s' is a legacy fact, which Puppet 8 does not set (include_legacy_facts is false): "
                       "with strict = error, %s, the lookup fails with \"Undefined variable '%s'\"%s%s",
                       v->expr, name, e->puppet8 ? "its default" : "Puppet 8's default", written, hint,
                       e->puppet8 ? "" : " once on Puppet 8");
            else
                ck_add(c, "puppet8-undefined-variable", sev, e->files[v->file].path, v->line, v->col,
                       "%%{%s}: '%s' is a legacy fact, which Puppet 8 does not set (include_legacy_facts is false): "
                       "with %s, the value interpolates ''%s, and the lookup fails under strict = error%s",
                       v->expr, name, setting, e->strict ? " with a warning" : "", hint);
            continue;
        }
        const ck_config *cf = v->cfg >= 0 && (size_t)v->cfg < e->nconfigs ? &e->configs[v->cfg] : NULL;
        if (!cf || !cf->cfg)
            continue;
        if (cf->cfg->version == 4)
            ck_add(c, "puppet8-v4-path-variable", sev, cf->path, v->line, v->col,
                   "%%{%s}: '%s' is a legacy fact, which Puppet 8 does not set: an undefined variable in a version 4 "
                   "hierarchy fails every lookup through this hiera.yaml under strict = error%s (convert it to version 5%s)",
                   v->expr, name, fails ? "" : !e->puppet8 ? ", Puppet 8's default" : ", not the setting here",
                   now ? " and use the structured fact" : "");
        else if (v->unshielded && (!e->puppet8 || fails))
            /* a datadir or options: Puppet 8.10 interpolates them when it builds the hierarchy, without
             * the shield of the locations (hiera_config.rb), so every lookup through it fails */
            ck_add(c, "puppet8-undefined-variable", sev, cf->path, v->line, v->col,
                   "%%{%s}: '%s' is a legacy fact, which Puppet 8 does not set (include_legacy_facts is false): a "
                   "level's datadir and options are not shielded as its paths are, so with strict = error, %s, every "
                   "lookup through this hiera.yaml fails with \"Undefined variable '%s'\"%s%s",
                   v->expr, name, e->puppet8 ? "its default" : "Puppet 8's default", written, hint,
                   e->puppet8 ? "" : " once on Puppet 8");
        else if (v->unshielded)
            ck_add(c, "puppet8-undefined-variable", sev, cf->path, v->line, v->col,
                   "%%{%s}: '%s' is a legacy fact, which Puppet 8 does not set (include_legacy_facts is false): with "
                   "%s, this datadir or option interpolates ''%s, and every lookup through this hiera.yaml fails under "
                   "strict = error (a level's datadir and options are not shielded as its paths are)%s",
                   v->expr, name, setting, e->strict ? " with a warning" : "", hint);
        else
            ck_add(c, "puppet8-undefined-variable", CHECK_WARNING, cf->path, v->line, v->col,
                   "%%{%s}: '%s' is a legacy fact, which Puppet 8 does not set: the location becomes '' for every "
                   "node (\"Interpolation failed with '%s', but compilation continuing\")%s",
                   v->expr, name, written, hint);
    }
}

static void not_hashes(ck_ctx *c)
{
    ck_env *e = c->env;
    bool fails = ck_strict_error(e);
    char setting[64], setting_c[66];
    strict_words(e, setting, sizeof setting);
    snprintf(setting_c, sizeof setting_c, "%s,", setting);
    for (size_t i = 0; i < e->nfiles; i++) {
        const ck_file *f = &e->files[i];
        if (f->fmt != FMT_YAML || !f->value || f->orphan || f->external)
            continue;
        const hv *v = f->value;
        /* an empty document (nil) and false are read as {} under any strict setting */
        if (hv_is(v, HV_HASH) || hv_is(v, HV_UNDEF) || (hv_is(v, HV_BOOL) && !hv_bool_val(v)))
            continue;
        const ysnode *root = f->ys && f->ys->ndocs ? f->ys->docs[0] : NULL;
        const char *what = hv_is(v, HV_ARRAY) ? "an array" : "a scalar";
        if (fails || !e->puppet8)
            ck_add(c, "puppet8-not-a-hash", fails ? CHECK_ERROR : CHECK_WARNING, f->path, root ? root->line : 1,
                   root ? root->col : 1,
                   "the document is %s, not a hash: with %s every lookup that reads the file fails "
                   "(\"file does not contain a valid yaml hash\")",
                   what, fails ? setting_c : "strict = error (Puppet 8's default)");
        else
            ck_add(c, "puppet8-not-a-hash", CHECK_WARNING, f->path, root ? root->line : 1, root ? root->col : 1,
                   "the document is %s, not a hash: with %s, the lookups ignore the file with a warning, and they "
                   "fail under strict = error (\"file does not contain a valid yaml hash\")",
                   what, setting);
    }
}

static void v3_configs(ck_ctx *c)
{
    ck_env *e = c->env;
    bool fails = ck_strict_error(e);
    char setting[64];
    strict_words(e, setting, sizeof setting);
    for (size_t i = 0; i < e->nconfigs; i++) {
        const ck_config *cf = &e->configs[i];
        if (cf->layer == LAYER_GLOBAL || cf->cfg || !cf->path)
            continue;
        bool ignored = false;
        herr err = {0};
        diag_sink quiet = {.fn = NULL, .data = NULL}, saved; /* (add_config reported its warnings already) */
        diag_enter(quiet, &saved);
        hcfg *cfg = config_load(e->cache, cf->path, cf->layer, &ignored, &err);
        diag_leave(&saved);
        config_free(cfg);
        herr_clear(&err);
        if (!ignored)
            continue;
        const char *where = cf->layer == LAYER_ENV ? "an environment" : "a module";
        if (fails)
            ck_add(c, "puppet8-v3-config", CHECK_ERROR, cf->path, 1, 1,
                   "a version 3 hiera.yaml in %s: with %s, every lookup there fails (\"hiera.yaml version 3 cannot be "
                   "used in %s\"); convert it to version 5",
                   where, setting, where);
        else
            ck_add(c, "puppet8-v3-config", CHECK_WARNING, cf->path, 1, 1,
                   "a version 3 hiera.yaml in %s: %s ignores it with a warning (%s), and every lookup there fails "
                   "under strict = error%s (\"hiera.yaml version 3 cannot be used in %s\"); convert it to version 5",
                   where, e->puppet8 ? "Puppet 8" : "Puppet 7", setting, e->puppet8 ? "" : ", Puppet 8's default", where);
    }
}

void ck_puppet8(ck_ctx *c)
{
    undefined_variables(c);
    not_hashes(c);
    v3_configs(c);
}
