/* serverfacts.c - Puppet::Node::ServerFacts.load (Puppet 8.10, lib/puppet/node/server_facts.rb)
 * of the local machine, with the Facter 4 facts it reads worked out as Facter does on Linux:
 *  - networking.fqdn (resolvers/linux/hostname.rb): gethostname(); a name with a dot is the host
 *    and its domain; else the canonical name getaddrinfo gives, when it is another name than the
 *    host and than the address; else the host, and the domain from /etc/resolv.conf ("domain X",
 *    else the first "search X");
 *  - networking.ip and .ip6 (resolvers/linux/networking.rb): the primary interface is the one of
 *    the first default route in /proc/net/route (destination and mask 00000000, interface not
 *    "*"), else the first interface with an address that is not ignored; its bindings are the
 *    addresses getifaddrs lists for it (with a netmask), and the fact is the first binding that is
 *    not loopback, link-local (169.254/16, fe80::/10) or unique-local (fc00::/7), else the first.
 * Not reproduced: Facter's `ip route show default` fallback when /proc/net/route has no default
 * route, and the addresses it adds from `ip route` "src" entries that no interface binds. */
#include "engine/serverfacts.h"

#include "base/fileio.h"
#include "base/fsjournal.h"
#include "base/util.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef HOST_NAME_MAX
#define HOST_NAME_MAX 255
#endif

#define PUPPET8_VERSION "8.10.0"

static const char *const NAMES[] = {"pe_serverversion", "serverversion", "servername", "serverip", "serverip6", NULL};

bool server_fact_name(const char *name)
{
    for (size_t i = 0; NAMES[i]; i++)
        if (!strcmp(NAMES[i], name))
            return true;
    return false;
}

/* ---------------------------------------------------------------- networking.fqdn */

static char *resolv_domain(void)
{
    sbuf b = {0};
    char *found = NULL;
    if (file_read("/etc/resolv.conf", &b, &(file_read_opts){.max = 1 << 20}, NULL) && b.len) {
        /* /^domain\s+([^.]\S+)/, else /^search\s+([^.]\S+)/ (Ruby's ^: at any line's start) */
        for (int pass = 0; pass < 2 && !found; pass++) {
            const char *word = pass ? "search" : "domain";
            size_t wl = strlen(word);
            for (const char *l = b.s; l && *l && !found; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
                if (strncmp(l, word, wl) || !(l[wl] == ' ' || l[wl] == '\t'))
                    continue;
                const char *p = l + wl;
                while (*p == ' ' || *p == '\t')
                    p++;
                if (!*p || *p == '.' || *p == '\n' || *p == '\r' || *p == ' ' || *p == '\t')
                    continue;
                const char *e = p;
                while (*e && *e != ' ' && *e != '\t' && *e != '\n' && *e != '\r' && *e != '\f' && *e != '\v')
                    e++;
                if (e - p >= 2)
                    found = xstrndup(p, (size_t)(e - p));
            }
        }
    }
    sb_free(&b);
    return found;
}

/* Facter's networking.fqdn and networking.hostname, networking.domain (NULL when unknown) */
static void host_names(char **fqdn, char **hostname, char **domain)
{
    *fqdn = *hostname = *domain = NULL;
    char host[HOST_NAME_MAX + 1] = "";
    if (gethostname(host, sizeof host - 1) != 0 || !*host)
        return;
    char *dot = strchr(host, '.');
    char *name = NULL, *dom = NULL, *full = NULL;
    if (dot && dot > host && dot[1]) {
        name = xstrndup(host, (size_t)(dot - host));
        dom = xstrdup(dot + 1);
    } else {
        name = xstrdup(host);
        struct addrinfo hints = {0}, *res = NULL;
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        hints.ai_flags = AI_CANONNAME;
        if (getaddrinfo(name, "0", &hints, &res) == 0 && res) {
            char addr[INET6_ADDRSTRLEN] = "";
            const void *a = res->ai_family == AF_INET ? (const void *)&((struct sockaddr_in *)res->ai_addr)->sin_addr
                                                      : (const void *)&((struct sockaddr_in6 *)res->ai_addr)->sin6_addr;
            inet_ntop(res->ai_family, a, addr, sizeof addr);
            const char *canon = res->ai_canonname;
            if (canon && *canon && strcmp(canon, name) && strcmp(canon, addr))
                full = xstrdup(canon);
            freeaddrinfo(res);
        }
        size_t nl = strlen(name);
        if (full && !strncmp(full, name, nl) && full[nl] == '.' && full[nl + 1])
            dom = xstrdup(full + nl + 1);
    }
    if (!dom || !*dom) {
        free(dom);
        dom = resolv_domain();
    }
    if (!full)
        full = dom && *dom ? xjoin(name, ".", dom, NULL) : xstrdup(name);
    *fqdn = full;
    *hostname = name;
    *domain = dom;
}

/* ---------------------------------------------------------------- networking.ip, .ip6 */

static char *primary_from_routes(void)
{
    sbuf b = {0};
    char *found = NULL;
    if (file_read("/proc/net/route", &b, &(file_read_opts){.max = 16 << 20}, NULL) && b.len) {
        const char *l = strchr(b.s, '\n'); /* (the header) */
        while (l && *++l && !found) {
            const char *end = strchr(l, '\n');
            size_t len = end ? (size_t)(end - l) : strlen(l);
            char *line = xstrndup(l, len);
            /* line.strip.split("\t") */
            char *s = line;
            while (*s == ' ' || *s == '\t' || *s == '\r')
                s++;
            size_t sl = strlen(s);
            while (sl && (s[sl - 1] == ' ' || s[sl - 1] == '\t' || s[sl - 1] == '\r'))
                s[--sl] = 0;
            char *f[16];
            size_t n = 0;
            for (char *p = s; n < 16;) {
                f[n++] = p;
                char *t = strchr(p, '\t');
                if (!t)
                    break;
                *t = 0;
                p = t + 1;
            }
            if (n > 7 && !strcmp(f[1], "00000000") && !strcmp(f[7], "00000000") && strcmp(f[0], "*"))
                found = xstrdup(f[0]);
            free(line);
            l = end;
        }
    }
    sb_free(&b);
    return found;
}

static bool in_prefix(const unsigned char *a, const unsigned char *p, int bits)
{
    for (int i = 0; i < bits; i++)
        if (((a[i / 8] >> (7 - i % 8)) & 1) != ((p[i / 8] >> (7 - i % 8)) & 1))
            return false;
    return true;
}

/* Networking.ignored_ip_address: loopback, link-local and unique-local addresses */
static bool ignored(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET) {
        const unsigned char *a = (const unsigned char *)&((const struct sockaddr_in *)sa)->sin_addr;
        return a[0] == 127 || (a[0] == 169 && a[1] == 254);
    }
    const unsigned char *a = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
    static const unsigned char loop[16] = {[15] = 1}, fe80[16] = {0xfe, 0x80}, fc00[16] = {0xfc};
    return !memcmp(a, loop, 16) || in_prefix(a, fe80, 10) || in_prefix(a, fc00, 7);
}

static char *address_text(const struct sockaddr *sa)
{
    char buf[INET6_ADDRSTRLEN] = "";
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, buf, sizeof buf);
    else
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, buf, sizeof buf);
    return xstrdup(buf);
}

/* an interface's binding of the family: the first not ignored, else the first */
static char *binding_of(struct ifaddrs *all, const char *iface, int family)
{
    const struct sockaddr *first = NULL;
    for (struct ifaddrs *i = all; i; i = i->ifa_next) {
        if (!i->ifa_addr || !i->ifa_netmask || i->ifa_addr->sa_family != family || strcmp(i->ifa_name, iface))
            continue;
        if (!ignored(i->ifa_addr))
            return address_text(i->ifa_addr);
        if (!first)
            first = i->ifa_addr;
    }
    return first ? address_text(first) : NULL;
}

/* PrimaryInterface.find_in_interfaces: the first interface (in getifaddrs' order of first
 * appearance) with an IPv4, else IPv6, binding that is not ignored */
static char *primary_from_interfaces(struct ifaddrs *all)
{
    for (struct ifaddrs *i = all; i; i = i->ifa_next) {
        bool seen = false;
        for (struct ifaddrs *j = all; j != i && !seen; j = j->ifa_next)
            seen = !strcmp(j->ifa_name, i->ifa_name);
        if (seen)
            continue;
        for (int fam = 0; fam < 2; fam++) {
            int family = fam ? AF_INET6 : AF_INET;
            for (struct ifaddrs *k = all; k; k = k->ifa_next)
                if (k->ifa_addr && k->ifa_netmask && k->ifa_addr->sa_family == family && !strcmp(k->ifa_name, i->ifa_name) &&
                    !ignored(k->ifa_addr))
                    return xstrdup(i->ifa_name);
        }
    }
    return NULL;
}

/* ---------------------------------------------------------------- ServerFacts.load */

static struct {
    char *names[8], *values[8];
    size_t n;
    char *warnings[2];
    size_t nwarnings;
} local;
static pthread_once_t local_once = PTHREAD_ONCE_INIT;

static void put(const char *name, char *value)
{
    local.names[local.n] = xstrdup(name);
    local.values[local.n++] = value;
}

static void local_init(void)
{
    sbuf pe = {0};
    if (file_read("/opt/puppetlabs/server/pe_version", &pe, &(file_read_opts){.max = 4096}, NULL) && pe.len) {
        size_t n = pe.len;
        if (n && pe.s[n - 1] == '\n')
            n--; /* (chomp) */
        if (n && pe.s[n - 1] == '\r')
            n--;
        put("pe_serverversion", xstrndup(pe.s, n));
    }
    sb_free(&pe);
    put("serverversion", xstrdup(PUPPET8_VERSION));
    char *fqdn, *hostname, *domain;
    host_names(&fqdn, &hostname, &domain);
    struct ifaddrs *all = NULL;
    if (getifaddrs(&all) != 0)
        all = NULL;
    char *primary = primary_from_routes();
    if (!primary && all)
        primary = primary_from_interfaces(all);
    char *ip = primary && all ? binding_of(all, primary, AF_INET) : NULL;
    char *ip6 = primary && all ? binding_of(all, primary, AF_INET6) : NULL;
    if (all)
        freeifaddrs(all);
    free(primary);
    if (fqdn)
        put("servername", fqdn);
    if (ip)
        put("serverip", ip);
    if (ip6)
        put("serverip6", ip6);
    if (!fqdn) {
        if (!hostname)
            local.warnings[local.nwarnings++] = xstrdup("Could not retrieve fact servername");
        else
            put("servername", domain && *domain ? xjoin(hostname, ".", domain, NULL) : xstrdup(hostname));
    }
    if (!ip && !ip6)
        local.warnings[local.nwarnings++] = xstrdup("Could not retrieve either serverip or serverip6 fact");
    free(hostname);
    free(domain);
}

hv *server_facts_local(hv **warnings)
{
    fsj_taint("the host's name and addresses were asked");
    pthread_once(&local_once, local_init);
    hv *h = hv_hash();
    for (size_t i = 0; i < local.n; i++)
        hv_hash_sets(h, local.names[i], hv_str(local.values[i]));
    if (warnings) {
        *warnings = hv_array();
        for (size_t i = 0; i < local.nwarnings; i++)
            hv_array_push(*warnings, hv_str(local.warnings[i]));
    }
    return h;
}
