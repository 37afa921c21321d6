/* The floor: what answering a keep-alive GET costs with nothing but the
 * socket work. One thread, one epoll (edge-triggered), one response built at
 * start (a head and BODY bytes of 'x'; only the Date is rewritten, once a
 * second), and for each request found in what one read brought: one writev of
 * head and body. No file, no parsing beyond finding the end of each head, no
 * allocation per request. benches/http/budget.py runs it beside nikaia and
 * nginx; it is a reference, not a server.
 *
 * usage: floor PORT BODY_BYTES      (listens on 127.0.0.1, or $FLOOR_ADDR)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 65536

static char head[256];
static size_t head_len;
static size_t date_at; /* where the 29 bytes of the Date value start */
static char *body;
static size_t body_len;
static time_t date_second;

/* Unread tails: a head split across two reads. */
static char pending[MAX_CONNS][4];
static unsigned char pending_len[MAX_CONNS];

static void set_date(void) {
    time_t now = time(NULL);
    if (now == date_second)
        return;
    date_second = now;
    struct tm tm;
    gmtime_r(&now, &tm);
    char d[32];
    strftime(d, sizeof d, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    memcpy(head + date_at, d, 29);
}

/* Counts the heads that end in buf (each "\r\n\r\n"), carrying the last
 * three bytes over to the next read of the same connection. */
static int heads_in(int fd, const char *buf, size_t n) {
    char joined[4 + 65536];
    size_t p = pending_len[fd];
    memcpy(joined, pending[fd], p);
    memcpy(joined + p, buf, n);
    size_t len = p + n;
    int count = 0;
    for (size_t i = 0; i + 3 < len; i++)
        if (joined[i] == '\r' && joined[i + 1] == '\n' && joined[i + 2] == '\r' && joined[i + 3] == '\n') {
            count++;
            i += 3;
        }
    size_t keep = len < 3 ? len : 3;
    memcpy(pending[fd], joined + len - keep, keep);
    pending_len[fd] = (unsigned char)keep;
    return count;
}

/* Writes one answer, blocking on a full socket: the bench's bodies fit the
 * socket buffer, so this loop rarely turns. */
static int answer(int fd) {
    struct iovec iov[2] = {{head, head_len}, {body, body_len}};
    size_t left = head_len + body_len;
    while (left > 0) {
        ssize_t w = writev(fd, iov, 2);
        if (w < 0) {
            if (errno == EAGAIN) {
                struct timespec ts = {0, 50000};
                nanosleep(&ts, NULL);
                continue;
            }
            return -1;
        }
        left -= (size_t)w;
        for (int i = 0; i < 2 && w > 0; i++) {
            size_t take = (size_t)w < iov[i].iov_len ? (size_t)w : iov[i].iov_len;
            iov[i].iov_base = (char *)iov[i].iov_base + take;
            iov[i].iov_len -= take;
            w -= (ssize_t)take;
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s PORT BODY_BYTES\n", argv[0]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN); /* a client that goes is a failed write, not the end */
    body_len = strtoul(argv[2], NULL, 10);
    body = malloc(body_len ? body_len : 1);
    memset(body, 'x', body_len);
    head_len = (size_t)snprintf(head, sizeof head,
                                "HTTP/1.1 200 OK\r\nDate: Thu, 01 Jan 1970 00:00:00 GMT\r\nServer: floor\r\n"
                                "Content-Type: application/octet-stream\r\nContent-Length: %zu\r\n\r\n",
                                body_len);
    date_at = (size_t)(strstr(head, "Date: ") - head) + 6;
    set_date();

    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((unsigned short)atoi(argv[1]))};
    const char *addr = getenv("FLOOR_ADDR");
    inet_pton(AF_INET, addr ? addr : "127.0.0.1", &a.sin_addr);
    if (bind(lfd, (struct sockaddr *)&a, sizeof a) < 0 || listen(lfd, 4096) < 0) {
        perror("bind/listen");
        return 1;
    }
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = lfd};
    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
    struct epoll_event events[256];
    static char buf[65536];
    for (;;) {
        int n = epoll_wait(ep, events, 256, 1000);
        set_date();
        for (int i = 0; i < n; i++) {
            int fd = events[i].data.fd;
            if (fd == lfd) {
                int c;
                while ((c = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
                    if (c >= MAX_CONNS) {
                        close(c);
                        continue;
                    }
                    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    pending_len[c] = 0;
                    struct epoll_event cev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET, .data.fd = c};
                    epoll_ctl(ep, EPOLL_CTL_ADD, c, &cev);
                }
                continue;
            }
            /* Edge-triggered: read until a short read, which means drained. */
            for (;;) {
                ssize_t r = read(fd, buf, sizeof buf);
                if (r <= 0) {
                    if (r == 0 || errno != EAGAIN)
                        close(fd);
                    break;
                }
                int heads = heads_in(fd, buf, (size_t)r);
                int failed = 0;
                for (int k = 0; k < heads && !failed; k++)
                    failed = answer(fd) < 0;
                if (failed) {
                    close(fd);
                    break;
                }
                if ((size_t)r < sizeof buf) {
                    if (events[i].events & (EPOLLRDHUP | EPOLLHUP))
                        close(fd);
                    break;
                }
            }
        }
    }
}
