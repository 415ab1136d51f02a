"""Small implementations under test by ``derive impl``: correct ones and known faulty forms."""
