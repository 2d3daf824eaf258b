/* tls: to be written */
