/* csv: to be written */
