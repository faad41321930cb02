"""URL slugs: slug.slugify turns a title into lower-case ASCII words joined by a separator."""
