/* elf.c — reading ELF files with libelf: the GNU build-id, the function
 * symbols, the loadable segments.
 *
 * Symbol tables come from .symtab and .dynsym (STT_FUNC and STT_GNU_IFUNC
 * defined at a non-zero address), merged with those of the file's debug
 * file when one exists: /usr/lib/debug/.build-id/xx/yyyy.debug, else the
 * .gnu_debuglink name next to the file, in its .debug/ and under
 * /usr/lib/debug/DIR/.  Addresses are ELF virtual addresses; the PT_LOAD
 * segments (agent_elf_loads) map a file offset to one (symbols.c).
 */
#include "elf.h"

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- ELF ---- */

static void elf_init(void)
{
    static int done;
    if (!done) { elf_version(EV_CURRENT); done = 1; }
}

static int hexify(const unsigned char *id, ssize_t n, char *hex, size_t cap)
{
    if ((size_t)(2 * n + 1) > cap) n = (ssize_t)(cap - 1) / 2;
    for (ssize_t i = 0; i < n; i++) sprintf(hex + 2 * i, "%02x", id[i]);
    hex[2 * n] = 0;
    return (int)(2 * n);
}

static int elf_build_id_of(Elf *e, char *hex, size_t cap)
{
    const void *id = NULL;
    ssize_t n = dwelf_elf_gnu_build_id(e, &id);
    hex[0] = 0;
    if (n <= 0) return 0;
    return hexify(id, n, hex, cap);
}

int agent_elf_build_id(const char *path, char *hex, size_t cap)
{
    elf_init();
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    int n = -1;
    if (e && elf_kind(e) == ELF_K_ELF) n = elf_build_id_of(e, hex, cap);
    if (e) elf_end(e);
    close(fd);
    return n;
}

static int elf_load_syms(Elf *e, agent_symtab *t)
{
    Elf_Scn *scn = NULL;
    int found = 0;
    while ((scn = elf_nextscn(e, scn))) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh)) continue;
        if (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) continue;
        if (sh.sh_entsize == 0) continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        if (!d) continue;
        size_t n = sh.sh_size / sh.sh_entsize;
        for (size_t i = 0; i < n; i++) {
            GElf_Sym s;
            if (!gelf_getsym(d, (int)i, &s)) continue;
            int type = GELF_ST_TYPE(s.st_info);
            if (type != STT_FUNC && type != STT_GNU_IFUNC) continue;
            if (s.st_shndx == SHN_UNDEF || s.st_value == 0) continue;
            const char *name = elf_strptr(e, sh.sh_link, s.st_name);
            if (!name || !*name) continue;
            if (agent_symtab_add(t, s.st_value, s.st_size, name, strlen(name)) < 0) return -1;
            found++;
        }
    }
    return found;
}

/* Loads the symbols of the ELF file at path into t; answers how many, -1
 * if it is not readable ELF.  Fills build-id and debuglink when asked. */
static int elf_file_syms(const char *path, agent_symtab *t, char *bid, size_t bidcap,
                         char *link, size_t linkcap)
{
    elf_init();
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    int n = -1;
    if (e && elf_kind(e) == ELF_K_ELF) {
        n = elf_load_syms(e, t);
        if (bid) elf_build_id_of(e, bid, bidcap);
        if (link) {
            GElf_Word crc;
            const char *l = dwelf_elf_gnu_debuglink(e, &crc);
            snprintf(link, linkcap, "%s", l ? l : "");
        }
    }
    if (e) elf_end(e);
    close(fd);
    return n;
}

int agent_elf_symtab(const char *path, const char *debug_root,
                     agent_symtab *t, char *err, size_t errlen)
{
    char dbg[8704];
    return agent_elf_symtab_at(path, path, debug_root, t, dbg, sizeof dbg, err, errlen);
}

int agent_elf_symtab_at(const char *path, const char *logical, const char *debug_root,
                        agent_symtab *t, char *dbg, size_t dbgcap, char *err, size_t errlen)
{
    char bid[128] = "", link[256] = "";
    int n = elf_file_syms(path, t, bid, sizeof bid, link, sizeof link);
    if (n < 0) {
        snprintf(err, errlen, "%s: not a readable ELF file", path);
        return -1;
    }
    int found = 0;
    if (bid[0] && debug_root) {
        snprintf(dbg, dbgcap, "%s/.build-id/%.2s/%s.debug", debug_root, bid, bid + 2);
        if (access(dbg, R_OK) == 0 && elf_file_syms(dbg, t, NULL, 0, NULL, 0) >= 0) found = 1;
    }
    if (!found && link[0]) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s", logical);
        char *slash = strrchr(dir, '/');
        if (slash) *slash = 0; else strcpy(dir, ".");
        const char *fmts[3] = { "%s/%s", "%s/.debug/%s", NULL };
        for (int i = 0; i < 3 && !found; i++) {
            if (fmts[i]) snprintf(dbg, dbgcap, fmts[i], dir, link);
            else if (debug_root) snprintf(dbg, dbgcap, "%s%s/%s", debug_root, dir, link);
            else continue;
            if (strcmp(dbg, path) == 0) continue;
            if (access(dbg, R_OK) == 0 && elf_file_syms(dbg, t, NULL, 0, NULL, 0) >= 0) found = 1;
        }
    }
    if (!found) dbg[0] = 0;
    agent_symtab_sort(t);
    return 0;
}

int agent_elf_loads(const char *path, agent_elf_seg **v, size_t *n)
{
    *v = NULL;
    *n = 0;
    elf_init();
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    size_t np = 0;
    int rc = -1;
    if (e && elf_getphdrnum(e, &np) == 0) {
        rc = 0;
        *v = np ? calloc(np, sizeof **v) : NULL;
        for (size_t i = 0; *v && i < np; i++) {
            GElf_Phdr ph;
            if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD)
                (*v)[(*n)++] = (agent_elf_seg){ ph.p_offset, ph.p_vaddr, ph.p_memsz };
        }
    }
    if (e) elf_end(e);
    close(fd);
    return rc;
}
