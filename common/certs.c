/* certs: to be written */
