/* The session id's syntax (session_id.h). */
#include "session_id.h"

int session_id_valid(const char *s, size_t n)
{
    if (n < 1 || n > SESSION_ID_MAX)
        return 0;
    /* Clients remove the dot segments "." and ".." of a URL before sending
     * it: such an id would name another path on the way here. */
    if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                 c == '.' || c == '_' || c == '~' || c == '-' || c == '/';
        if (!ok)
            return 0;
    }
    return 1;
}
