// What a durable small commit's page pattern costs this machine's disk, for the commit-log
// proposal (Spec/proposals/commit-log.md). Not part of any build.
//
//   cc -O2 sync-pattern.c -o /tmp/sync-pattern
//   /tmp/sync-pattern DESIGN COMMITS_PER_SYNC DIRECTORY
//
// DESIGN: 0 = today's protocol (the commit's pages and a meta page written in place, the data
//         file synced); 1 = the same writes unsynced plus a log record of them, the log synced,
//         the data file synced every 1,000 commits; 2 = the log record only, each page written
//         to the data file once per checkpoint of 1,000 commits.
// A commit writes four 4 KiB pages, as at 100,000 entries: root and catalog among 8 recently
// freed pages, a branch among 44, a leaf among 4,000. Prints microseconds per commit spent in
// writes and syncs.
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { PAGE = 4096, DATA_PAGES = 4200, LOG_PAGES = 6000, CHECKPOINT = 1000, COMMITS = 3000 };

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void must(int ok, const char *what) {
    if (!ok) { perror(what); exit(1); }
}

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: %s DESIGN COMMITS_PER_SYNC DIRECTORY\n", argv[0]); return 2; }
    int design = atoi(argv[1]), group = atoi(argv[2]);
    if (design < 0 || design > 2 || group < 1 || group > 16) { fprintf(stderr, "bad arguments\n"); return 2; }
    char path[4096];
    snprintf(path, sizeof path, "%s/probe-data", argv[3]);
    int data = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    snprintf(path, sizeof path, "%s/probe-log", argv[3]);
    int log = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    must(data >= 0 && log >= 0, "open");
    static char buffer[PAGE * 8];
    memset(buffer, 1, sizeof buffer);
    for (int page = 0; page < DATA_PAGES; page++) must(pwrite(data, buffer, PAGE, (off_t)page * PAGE) == PAGE, "pwrite");
    for (int page = 0; page < LOG_PAGES; page++) must(pwrite(log, buffer, PAGE, (off_t)page * PAGE) == PAGE, "pwrite");
    must(fsync(data) == 0 && fsync(log) == 0, "fsync");

    static char dirty[DATA_PAGES];
    long logPosition = 1;
    srand(1);
    double start = now();
    for (int commit = 1; commit <= COMMITS; commit++) {
        long pages[4] = { 2 + rand() % 8, 2 + rand() % 8, 10 + rand() % 44, 60 + rand() % 4000 };
        for (int i = 0; i < 4; i++) {
            if (design == 2) dirty[pages[i]] = 1;
            else must(pwrite(data, buffer, PAGE, pages[i] * PAGE) == PAGE, "pwrite");
        }
        if (design != 2) must(pwrite(data, buffer, PAGE, (commit & 1) * PAGE) == PAGE, "pwrite");
        if (design > 0) {
            if (commit % CHECKPOINT == 0 || logPosition + 5 > LOG_PAGES) {
                if (design == 2) {
                    for (int page = 0; page < DATA_PAGES; page++) {
                        if (!dirty[page]) continue;
                        must(pwrite(data, buffer, PAGE, (off_t)page * PAGE) == PAGE, "pwrite");
                        dirty[page] = 0;
                    }
                    must(pwrite(data, buffer, PAGE, 0) == PAGE, "pwrite");
                }
                must(fdatasync(data) == 0, "fdatasync");
                must(pwrite(log, buffer, PAGE, 0) == PAGE, "pwrite");
                must(fdatasync(log) == 0, "fdatasync");
                logPosition = 1;
            }
            must(pwrite(log, buffer, 5 * PAGE, logPosition * PAGE) == 5 * PAGE, "pwrite");
            logPosition += 5;
        }
        if (commit % group == 0) must(fdatasync(design == 0 ? data : log) == 0, "fdatasync");
    }
    printf("design %d, %d commits per sync: %.1f us per commit\n", design, group, (now() - start) / COMMITS * 1e6);
    return 0;
}
