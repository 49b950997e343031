/* import.h — `flamedb import`: perf script text and folded files pushed
 * to a running server (import.c). */
#ifndef FLAMEDB_CLIENT_IMPORT_H
#define FLAMEDB_CLIENT_IMPORT_H

/* The command's arguments after "import"; answers the exit status. */
int client_import_main(int argc, char **argv);

#endif
