/* tree.c - where the code of a folder is (check.h: check_tree_kind_of, check_tmp_codedir,
 * check_hiera_config): how hiera check reads a PATH it is given, and hiera lsp its workspace. */
#include "check/check.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/util.h"

check_tree_kind check_tree_kind_of(const char *dir)
{
    char *p_env = xjoin(dir, "/environments", NULL), *p_conf = xjoin(dir, "/environment.conf", NULL),
         *p_meta = xjoin(dir, "/metadata.json", NULL), *p_pf = xjoin(dir, "/Puppetfile", NULL);
    bool env = path_is_file(p_conf) || path_is_file(p_pf);
    check_tree_kind k = !env && path_is_dir(p_env) ? CHECK_TREE_CODEDIR
                        : !env && path_is_file(p_meta) ? CHECK_TREE_MODULE
                                                       : CHECK_TREE_ENVIRONMENT;
    free(p_env);
    free(p_conf);
    free(p_meta);
    free(p_pf);
    return k;
}

bool check_tmp_codedir(const char *base, const char *env, const char *dir, char **code, char **envs, char **envdir,
                       char **error)
{
    *code = xjoin(base, "/code", NULL);
    *envs = xjoin(base, "/envs", NULL);
    *envdir = xjoin(*envs, "/", env, NULL);
    mkdir(base, 0700); /* (it may exist: a mkdtemp folder) */
    mkdir(*code, 0700);
    mkdir(*envs, 0700);
    if (dir ? symlink(dir, *envdir) == 0 : mkdir(*envdir, 0700) == 0)
        return true;
    *error = dir ? xasprintf("cannot link %s into the temporary folder %s: %s", dir, base, strerror(errno))
                 : xasprintf("cannot make %s: %s", *envdir, strerror(errno));
    return false;
}

char *check_hiera_config(const char *codedir, const char *confdir)
{
    char *p = xjoin(codedir, "/hiera.yaml", NULL);
    if (path_is_file(p))
        return p;
    free(p);
    return xjoin(confdir, "/hiera.yaml", NULL);
}
