/* optim: to be written */
