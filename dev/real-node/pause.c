/*
 * The pod sandbox's only process (the CRI "pause" container, image
 * registry.k8s.io/pause:3.10 as built by dev/real-node/images.sh): it holds
 * the pod's namespaces open, reaps the zombies it inherits as the pid
 * namespace's init, and exits 0 on SIGINT or SIGTERM. No registry is
 * reachable here, so this program stands in for Kubernetes' pause image.
 * It must not do anything else. Built static: the image is FROM scratch.
 */
#include <signal.h>
#include <stddef.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_term(int sig) {
  (void)sig;
  _exit(0);
}

static void on_child(int sig) {
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int main(void) {
  struct sigaction term = {0};
  struct sigaction child = {0};
  term.sa_handler = on_term;
  child.sa_handler = on_child;
  child.sa_flags = SA_NOCLDSTOP | SA_RESTART;
  if (sigaction(SIGINT, &term, NULL) != 0 || sigaction(SIGTERM, &term, NULL) != 0 ||
      sigaction(SIGCHLD, &child, NULL) != 0) {
    return 1;
  }
  for (;;) {
    pause();
  }
}
